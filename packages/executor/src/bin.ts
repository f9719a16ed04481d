#!/usr/bin/env node
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { PoolConfigInput } from './config.js';
import { ExecutorError } from './errors.js';
import { startWorker } from './redis-worker.js';
import { serve } from './serve.js';

const USAGE = `usage:
  agentrl-executor serve  [--port 8090] [--host 127.0.0.1] [--max-pending 100000] [--redis redis://... [--lease-ms 15000]] [--prefix agentrl:exec:] [pool options]
  agentrl-executor worker --redis redis://... [--prefix agentrl:exec:] [--batch-size 64] [--visibility-ms 30000] [--reap-after-ms 2xvisibility] [pool options]
both with --redis: [--connect-timeout-ms 5000]
pool options: --concurrency N --servers N --timeout-ms N --memory-mb N --python python3 --preload numpy,sympy
  --max-output-bytes N (cap on stdout and on stderr each, per call; default 65536)
  --read-only PATH[:PATH...] (host paths exposed read-only at the same path, /tmp ones included; repeatable)
  --pythonpath PATH[:PATH...] (import path entries for user code, as PYTHONPATH; exposed read-only; repeatable)`;

/** Runs the CLI; `agentrl executor ...` in the trainer calls this with its remaining arguments. */
export async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      redis: { type: 'string' },
      prefix: { type: 'string' },
      'batch-size': { type: 'string' },
      'visibility-ms': { type: 'string' },
      'max-pending': { type: 'string' },
      'lease-ms': { type: 'string' },
      'reap-after-ms': { type: 'string' },
      'connect-timeout-ms': { type: 'string' },
      concurrency: { type: 'string' },
      servers: { type: 'string' },
      'timeout-ms': { type: 'string' },
      'memory-mb': { type: 'string' },
      python: { type: 'string' },
      preload: { type: 'string' },
      'max-output-bytes': { type: 'string' },
      'read-only': { type: 'string', multiple: true },
      pythonpath: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  const pool: PoolConfigInput = Object.fromEntries(
    Object.entries({
      concurrency: num(values.concurrency),
      servers: num(values.servers),
      timeoutMs: num(values['timeout-ms']),
      memoryMb: num(values['memory-mb']),
      python: values.python,
      preload: values.preload?.split(',').filter(Boolean),
      maxOutputBytes: num(values['max-output-bytes']),
      extraReadOnly: pathList(values['read-only']),
      pythonPath: pathList(values.pythonpath),
    }).filter(([, v]) => v !== undefined),
  );
  const command = positionals[0];
  if (values.help || (command !== 'serve' && command !== 'worker')) {
    console.log(USAGE);
    process.exitCode = values.help ? 0 : 2;
    return;
  }
  let stop: () => Promise<void>;
  if (command === 'serve') {
    const server = await serve({
      port: num(values.port),
      host: values.host,
      redis: values.redis,
      prefix: values.prefix,
      maxPending: count('max-pending', values['max-pending']),
      leaseMs: count('lease-ms', values['lease-ms']),
      connectTimeoutMs: count('connect-timeout-ms', values['connect-timeout-ms']),
      pool,
    });
    console.log(`agentrl-executor: serving on ${server.url} (${server.backend.mode})`);
    stop = server.close;
  } else {
    if (!values.redis) throw new Error('agentrl-executor worker needs --redis redis://host:port');
    const worker = await startWorker({
      redis: values.redis,
      prefix: values.prefix,
      batchSize: num(values['batch-size']),
      visibilityMs: num(values['visibility-ms']),
      reapAfterMs: count('reap-after-ms', values['reap-after-ms']),
      connectTimeoutMs: count('connect-timeout-ms', values['connect-timeout-ms']),
      pool,
    });
    console.log(`agentrl-executor: worker ${worker.consumer} taking jobs from ${values.redis}`);
    stop = worker.stop;
  }
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      void stop().then(() => process.exit(0));
    });
  }
}

/** Repeated flags, each a PATH-style list (`a:b`), into one list; undefined when the flag is absent. */
function pathList(values: string[] | undefined): string[] | undefined {
  return values?.flatMap((v) => v.split(':')).filter(Boolean);
}

/** A positive integer flag, or a clear error naming it. */
function count(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new ExecutorError(
      'INVALID_CONFIG',
      `--${flag} must be a positive integer; got ${JSON.stringify(v)}`,
    );
  }
  return n;
}

function invokedDirectly(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  main(process.argv.slice(2)).catch((e: Error) => {
    console.error(e.message);
    process.exit(1);
  });
}
