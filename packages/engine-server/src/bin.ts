#!/usr/bin/env node
import { serveCheckpoint } from './serve.js';
import { parseServeArgs, SERVE_USAGE } from './serve-args.js';

let options: ReturnType<typeof parseServeArgs>;
try {
  options = parseServeArgs(process.argv.slice(2));
} catch (err) {
  console.error(`agentrl-engine-server: ${(err as Error).message}`);
  process.exit(2);
}
if (options === null) console.log(SERVE_USAGE);
else
  await serveCheckpoint(options).catch((err: Error) => {
    console.error(`agentrl-engine-server: ${err.message}`);
    process.exit(1);
  });
