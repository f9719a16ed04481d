#!/usr/bin/env node
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { executorParseOptions, executorUsage } from './cli-flags.js';
import type { PoolConfigInput } from './config.js';
import { EmbeddedPool } from './embedded-pool.js';
import { ExecutorError } from './errors.js';
import type { MemoryCap } from './memory-cgroup.js';
import { startWorker } from './redis-worker.js';
import { serve } from './serve.js';

/** Runs the CLI; `agentrl executor ...` in the trainer calls this with its remaining arguments. */
export async function main(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: executorParseOptions() });
  } catch (e) {
    // node:util's parse errors (unknown flag, missing value) are usage errors: name it, show the
    // usage, exit 2 like --help's refusal, instead of an uncaught exception's exit 1.
    if ((e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS_')) {
      console.error(`agentrl-executor: ${(e as Error).message}\n\n${executorUsage()}`);
      process.exitCode = 2;
      return;
    }
    throw e;
  }
  const { values, positionals } = parsed;
  const str = (name: string) => values[name] as string | undefined;
  const num = (name: string) => (str(name) === undefined ? undefined : Number(str(name)));
  const pool: PoolConfigInput = Object.fromEntries(
    Object.entries({
      concurrency: num('concurrency'),
      servers: num('servers'),
      timeoutMs: num('timeout-ms'),
      memoryMb: num('memory-mb'),
      python: str('python'),
      preload: str('preload')?.split(',').filter(Boolean),
      maxOutputBytes: num('max-output-bytes'),
      extraReadOnly: pathList(values['read-only'] as string[] | undefined),
      pythonPath: pathList(values.pythonpath as string[] | undefined),
      networkPerCall: onOff('network-per-call', str('network-per-call')),
      memoryCgroup: str('memory-cgroup'),
    }).filter(([, v]) => v !== undefined),
  );
  const command = positionals[0];
  if (values.help || (command !== 'serve' && command !== 'worker')) {
    console.log(executorUsage());
    process.exitCode = values.help ? 0 : 2;
    return;
  }
  let stop: () => Promise<void>;
  if (command === 'serve') {
    const server = await serve({
      port: num('port'),
      host: str('host'),
      redis: str('redis'),
      prefix: str('prefix'),
      maxPending: count('max-pending', str('max-pending')),
      leaseMs: count('lease-ms', str('lease-ms')),
      connectTimeoutMs: count('connect-timeout-ms', str('connect-timeout-ms')),
      pool,
    });
    console.log(`agentrl-executor: serving on ${server.url} (${server.backend.mode})`);
    if (server.backend instanceof EmbeddedPool) console.log(memoryCapLine(server.backend.memoryCap));
    stop = server.close;
  } else {
    const redis = str('redis');
    if (!redis) throw new Error('agentrl-executor worker needs --redis redis://host:port');
    const worker = await startWorker({
      redis,
      prefix: str('prefix'),
      batchSize: num('batch-size'),
      visibilityMs: num('visibility-ms'),
      reapAfterMs: count('reap-after-ms', str('reap-after-ms')),
      connectTimeoutMs: count('connect-timeout-ms', str('connect-timeout-ms')),
      pool,
    });
    console.log(`agentrl-executor: worker ${worker.consumer} taking jobs from ${redis}`);
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

/** An on|off flag, or a clear error naming it. */
function onOff(flag: string, v: string | undefined): boolean | undefined {
  if (v === undefined) return undefined;
  if (v === 'on' || v === 'off') return v === 'on';
  throw new ExecutorError('INVALID_CONFIG', `--${flag} takes on or off; got ${JSON.stringify(v)}`);
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

/** The memory cap in force, once at start: an operator sees whether memory.max applies, or why not. */
function memoryCapLine(cap: MemoryCap): string {
  return cap.kind === 'cgroup'
    ? `agentrl-executor: per-call memory.max under ${cap.parent}, plus the sampling cap`
    : `agentrl-executor: memory cap by sampling (no per-call cgroup: ${cap.reason})`;
}
