import type { Redis } from 'ioredis';
import type { EmbeddedPool } from '../embedded-pool.js';
import type { redisKeys } from '../redis-scripts.js';
import type { RunRequest } from '../types.js';
import type { WorkerConfig, WorkerSkips } from './options.js';

/** A stream entry as XREADGROUP / XAUTOCLAIM return it; null fields: the entry was deleted while pending. */
export type StreamEntry = [entryId: string, fields: string[] | null];

/** A job taken from the stream: its fields (j job id, r reply stream, l lease, d deadline, p payload). */
export interface Job {
  entryId: string;
  f: Record<string, string>;
  /** the parsed payload, or why it could not be parsed (answered as sandbox_error, never retried) */
  request: RunRequest | Error;
}

/** What one worker's modules share: its connections, its pool, the jobs it holds and its tallies. */
export interface WorkerContext {
  readonly opts: WorkerConfig;
  readonly keys: ReturnType<typeof redisKeys>;
  /** this worker's consumer name in the group */
  readonly consumer: string;
  readonly reapAfterMs: number;
  /** commands and scripts */
  readonly cmd: Redis;
  /** XREADGROUP BLOCK only, so a blocked read never delays a publish */
  readonly blocking: Redis;
  readonly pool: EmbeddedPool;
  /** entry ids of the jobs running or being answered (the heartbeat keeps them claimed) */
  readonly active: Set<string>;
  readonly tally: { done: number; reaped: number; skips: WorkerSkips };
  stopping: boolean;
  /** wakes the intake loop when it waits for a free slot */
  wake?: () => void;
}

/** Holds a job while `work` runs: its entry stays claimed (heartbeat) until then; the loop wakes after. */
export function hold(ctx: WorkerContext, entryId: string, work: () => Promise<void>): void {
  ctx.active.add(entryId);
  void work().finally(() => {
    ctx.active.delete(entryId);
    ctx.wake?.();
  });
}
