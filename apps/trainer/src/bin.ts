#!/usr/bin/env node
import { register } from 'node:module';

// Before the CLI's imports load: see cjs-interop-hook.ts.
register('./cjs-interop-hook.js', import.meta.url);
const { main, reportError } = await import('./cli/main.js');

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.exitCode = reportError(err);
  },
);
