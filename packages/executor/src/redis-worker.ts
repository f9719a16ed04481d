import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { type PoolConfigInput, parseConfig } from './config.js';
import { EmbeddedPool } from './embedded-pool.js';
import { ExecutorError } from './errors.js';
import { COMPLETE, connectRedis, fields, redisKeys } from './redis-scripts.js';
import { errorResult } from './requests.js';
import type { RunRequest, RunResult } from './types.js';

export const WorkerSchema = z.object({
  redis: z.string().describe('Redis URL shared with the servers/clients'),
  prefix: z
    .string()
    .default('agentrl:exec:')
    .describe('key prefix shared by clients and workers of one deployment'),
  batchSize: z.number().int().min(1).max(10_000).default(64).describe('jobs taken from Redis per read'),
  visibilityMs: z
    .number()
    .int()
    .min(100)
    .default(30_000)
    .describe('a job taken by a worker that stops heart-beating for this long is retaken by another'),
  maxDeliveries: z
    .number()
    .int()
    .min(1)
    .default(5)
    .describe(
      'a job retaken this many times (its workers kept dying) is answered with sandbox_error instead',
    ),
  doneTtlSeconds: z
    .number()
    .int()
    .min(1)
    .default(3600)
    .describe('how long a job id is remembered as answered'),
});
export type WorkerOptions = z.input<typeof WorkerSchema> & { pool?: PoolConfigInput };

export interface Worker {
  readonly consumer: string;
  readonly pool: EmbeddedPool;
  /** Jobs this worker answered (first answers only). */
  completed(): number;
  /** Stops taking jobs, finishes the ones it has, closes the pool and the connections. */
  stop(): Promise<void>;
}

/**
 * A worker: takes batches of jobs from the Redis stream through the consumer group, runs them on an
 * embedded pool, publishes each result once and acknowledges it. Jobs of a worker that died (no heartbeat
 * for visibilityMs) are retaken with XAUTOCLAIM, so delivery is at-least-once and answers exactly-once.
 */
export async function startWorker(options: WorkerOptions): Promise<Worker> {
  const { pool: poolInput, ...rest } = options;
  const opts = parseConfig(WorkerSchema, rest, 'worker options');
  const keys = redisKeys(opts.prefix);
  const consumer = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const pool = await new EmbeddedPool(poolInput ?? {}).start();
  const blocking: Redis = connectRedis(opts.redis);
  const cmd: Redis = connectRedis(opts.redis);
  for (const c of [blocking, cmd]) c.on('error', () => {});
  const active = new Set<string>();
  let stopping = false;
  let done = 0;
  let wake: (() => void) | undefined;

  try {
    await cmd.ping();
  } catch (cause) {
    await pool.close();
    throw new ExecutorError('TRANSPORT', `Redis at ${opts.redis} did not answer; start redis-server first`, {
      cause,
    });
  }

  const ensureGroup = async () => {
    try {
      await cmd.xgroup('CREATE', keys.jobs, keys.group, '0', 'MKSTREAM');
    } catch (e) {
      if (!String((e as Error).message).includes('BUSYGROUP')) throw e;
    }
  };
  await ensureGroup();

  const process1 = async (entryId: string, list: string[]) => {
    const f = fields(list);
    let result: RunResult;
    try {
      result = await pool.run(JSON.parse(f.p ?? '{}') as RunRequest);
    } catch (e) {
      result = errorResult(e as Error, 0); // an invalid request is answered, not retried forever
    }
    await publish(entryId, f, result);
  };

  const publish = async (entryId: string, f: Record<string, string>, result: RunResult) => {
    // Retried until Redis takes it: connections wait through restarts (maxRetriesPerRequest: null).
    for (;;) {
      try {
        const first = await cmd.eval(
          COMPLETE,
          3,
          keys.jobs,
          keys.done(f.j ?? entryId),
          f.r ?? `${opts.prefix}reply:orphans`,
          keys.group,
          entryId,
          f.j ?? entryId,
          JSON.stringify(result),
          opts.doneTtlSeconds,
        );
        if (first === 1) done++;
        return;
      } catch {
        if (stopping) return;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  };

  const launch = (entries: [string, string[] | null][]) => {
    for (const [entryId, list] of entries) {
      if (!list) {
        void cmd.xack(keys.jobs, keys.group, entryId).catch(() => {}); // deleted while pending
        continue;
      }
      active.add(entryId);
      void process1(entryId, list).finally(() => {
        active.delete(entryId);
        wake?.();
      });
    }
  };

  /** Answers jobs that already took down maxDeliveries workers, so one job cannot kill the fleet. */
  const dropPoison = async (claimed: [string, string[] | null][]) => {
    const ids = claimed.map(([id]) => id);
    const first = ids[0] as string;
    const last = ids.at(-1) as string;
    const info = (await cmd.xpending(
      keys.jobs,
      keys.group,
      first,
      last,
      ids.length + active.size + 16,
      consumer,
    )) as [string, string, number, number][];
    const deliveries = new Map(info.map(([id, , , count]) => [id, count]));
    const keep: [string, string[] | null][] = [];
    for (const entry of claimed) {
      const [entryId, list] = entry;
      const count = deliveries.get(entryId) ?? 0;
      if (!list || count <= opts.maxDeliveries) {
        keep.push(entry);
        continue;
      }
      const f = fields(list);
      const err = new ExecutorError(
        'WORKER_CRASHED',
        `job ${f.j} was taken ${count - 1} times by workers that died before answering; not retrying it`,
      );
      active.add(entryId);
      void publish(entryId, f, errorResult(err, 0)).finally(() => {
        active.delete(entryId);
        wake?.();
      });
    }
    return keep;
  };

  // Heartbeat: re-claiming our own jobs resets their idle time, so long runs are not retaken.
  const heartbeat = setInterval(
    () => {
      if (active.size === 0) return;
      void cmd.xclaim(keys.jobs, keys.group, consumer, 0, ...active, 'JUSTID').catch(() => {});
    },
    Math.max(50, Math.floor(opts.visibilityMs / 3)),
  );

  const capacity = pool.config.concurrency * 2; // keep the pool fed while results are published
  let lastReclaim = 0;
  const loop = (async () => {
    while (!stopping) {
      const free = Math.min(opts.batchSize, capacity - active.size);
      if (free <= 0) {
        await new Promise<void>((r) => {
          wake = r;
        });
        continue;
      }
      try {
        if (Date.now() - lastReclaim > Math.min(1000, opts.visibilityMs / 2)) {
          lastReclaim = Date.now();
          const [, claimed] = (await cmd.xautoclaim(
            keys.jobs,
            keys.group,
            consumer,
            opts.visibilityMs,
            '0-0',
            'COUNT',
            free,
          )) as [string, [string, string[] | null][]];
          if (claimed.length > 0) {
            launch(await dropPoison(claimed));
            continue;
          }
        }
        const res = (await blocking.xreadgroup(
          'GROUP',
          keys.group,
          consumer,
          'COUNT',
          free,
          'BLOCK',
          250,
          'STREAMS',
          keys.jobs,
          '>',
        )) as [string, [string, string[]][]][] | null;
        if (res) for (const [, entries] of res) launch(entries);
      } catch (e) {
        if (String((e as Error).message).includes('NOGROUP')) {
          await ensureGroup().catch(() => {}); // Redis restarted empty
        } else if (!stopping) {
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }
  })();

  return {
    consumer,
    pool,
    completed: () => done,
    async stop() {
      stopping = true;
      wake?.();
      await loop;
      while (active.size > 0) await new Promise((r) => setTimeout(r, 20));
      clearInterval(heartbeat);
      await pool.close();
      blocking.disconnect();
      cmd.disconnect();
    },
  };
}
