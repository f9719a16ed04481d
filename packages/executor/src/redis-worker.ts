import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { parseConfig } from './config.js';
import { redisKeys } from './redis-scripts.js';
import type { WorkerContext } from './worker/context.js';
import { ensureGroup, openWorker, stopWorker } from './worker/lifecycle.js';
import { runLoop } from './worker/loop.js';
import { type Worker, type WorkerOptions, WorkerSchema } from './worker/options.js';
import { startHeartbeat } from './worker/reclaim.js';

export { type Worker, type WorkerOptions, WorkerSchema, type WorkerSkips } from './worker/options.js';

/**
 * A worker: takes batches of jobs from the Redis stream through the consumer group, runs them on an
 * embedded pool, publishes each result once and acknowledges it. Jobs of a worker that died (no heartbeat
 * for visibilityMs) are retaken with XAUTOCLAIM, so delivery is at-least-once and answers exactly-once.
 * One module per concern under `worker/`: intake (reading and parsing jobs), screen (lease and deadline
 * checks), run-job (the sandbox call), reply (publishing), reclaim (heartbeat, retaking, poison jobs,
 * dead consumers), loop, lifecycle (connect, group, stop).
 */
export async function startWorker(options: WorkerOptions): Promise<Worker> {
  const { pool: poolInput, ...rest } = options;
  const opts = parseConfig(WorkerSchema, rest, 'worker options');
  const keys = redisKeys(opts.prefix);
  const { blocking, cmd, pool } = await openWorker(opts, poolInput);
  const ctx: WorkerContext = {
    opts,
    keys,
    consumer: `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
    reapAfterMs: opts.reapAfterMs ?? 2 * opts.visibilityMs,
    cmd,
    blocking,
    pool,
    active: new Set(),
    tally: { done: 0, reaped: 0, skips: { expired: 0, abandoned: 0, answered: 0, cancelled: 0 } },
    stopping: false,
  };
  await ensureGroup(cmd, keys);
  const heartbeat = startHeartbeat(ctx);
  const loop = runLoop(ctx);
  return {
    consumer: ctx.consumer,
    pool,
    completed: () => ctx.tally.done,
    skipped: () => ({ ...ctx.tally.skips }),
    reaped: () => ctx.tally.reaped,
    stop: () => stopWorker(ctx, loop, heartbeat),
  };
}
