#!/usr/bin/env node
import { main, reportError } from './cli/main.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.exitCode = reportError(err);
  },
);
