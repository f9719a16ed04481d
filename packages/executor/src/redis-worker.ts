import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { type PoolConfigInput, parseConfig } from './config.js';
import { EmbeddedPool } from './embedded-pool.js';
import { ExecutorError } from './errors.js';
import {
  COMPLETE,
  ConnectTimeoutSchema,
  connectRedis,
  fields,
  firstAnswer,
  REAP,
  redisKeys,
  SCREEN,
  Screen,
} from './redis-scripts.js';
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
  reapAfterMs: z
    .number()
    .int()
    .min(100)
    .optional()
    .describe(
      'a consumer (worker) silent this long with no job pending is removed from the group; default 2 x visibilityMs',
    ),
  connectTimeoutMs: ConnectTimeoutSchema,
});
export type WorkerOptions = z.input<typeof WorkerSchema> & { pool?: PoolConfigInput };

export interface WorkerSkips {
  /** Past their deadline (the caller had its DEADLINE error, or would before this run could end). */
  expired: number;
  /** Their client's lease had lapsed: the client (an HTTP front end, say) was killed or closed. */
  abandoned: number;
  /** Answered already (a copy resubmitted after a Redis restart or a lapsed lease). */
  answered: number;
  /** Cancelled by their caller (an HTTP caller that hung up, an aborted signal). */
  cancelled: number;
}

export interface Worker {
  readonly consumer: string;
  readonly pool: EmbeddedPool;
  /** Jobs this worker answered (first answers only). */
  completed(): number;
  /** Jobs taken and not run (or run and not published) because nobody wanted the answer any more. */
  skipped(): WorkerSkips;
  /** Consumers of dead workers this worker removed from the group. */
  reaped(): number;
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
  const reapAfterMs = opts.reapAfterMs ?? 2 * opts.visibilityMs;
  const blocking: Redis = connectRedis(opts.redis);
  const cmd: Redis = connectRedis(opts.redis);
  for (const c of [blocking, cmd]) c.on('error', () => {});
  // Redis first (it fails fast on a wrong address), then the pool (which takes seconds to warm).
  try {
    await firstAnswer(cmd, opts.redis, opts.connectTimeoutMs, 'start redis-server or fix --redis');
  } catch (e) {
    blocking.disconnect();
    cmd.disconnect();
    throw e;
  }
  let pool: EmbeddedPool;
  try {
    pool = await new EmbeddedPool(poolInput ?? {}).start();
  } catch (e) {
    blocking.disconnect();
    cmd.disconnect();
    throw e;
  }
  const active = new Set<string>();
  let stopping = false;
  let done = 0;
  const skips: WorkerSkips = { expired: 0, abandoned: 0, answered: 0, cancelled: 0 };
  let reaped = 0;
  let wake: (() => void) | undefined;

  const ensureGroup = async () => {
    try {
      await cmd.xgroup('CREATE', keys.jobs, keys.group, '0', 'MKSTREAM');
    } catch (e) {
      if (!String((e as Error).message).includes('BUSYGROUP')) throw e;
    }
  };
  await ensureGroup();

  const process1 = async (entryId: string, f: Record<string, string>, request: RunRequest | Error) => {
    let result: RunResult;
    try {
      if (request instanceof Error) throw request;
      result = await pool.run(request);
    } catch (e) {
      result = errorResult(e as Error, 0); // an invalid request is answered, not retried forever
    }
    await publish(entryId, f, result);
  };

  const publish = async (entryId: string, f: Record<string, string>, result: RunResult) => {
    // Retried until Redis takes it: connections wait through restarts (maxRetriesPerRequest: null).
    for (;;) {
      try {
        const outcome = await cmd.eval(
          COMPLETE,
          4,
          keys.jobs,
          keys.done(f.j ?? entryId),
          f.r ?? `${opts.prefix}reply:orphans`,
          f.l ?? '',
          keys.group,
          entryId,
          f.j ?? entryId,
          JSON.stringify(result),
          opts.doneTtlSeconds,
        );
        if (outcome === 1) done++;
        else if (outcome === 2) skips.abandoned++;
        return;
      } catch {
        if (stopping) return;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  };

  /** Runs the jobs taken that are still wanted (SCREEN drops the others without running them). */
  const launch = async (entries: [string, string[] | null][]) => {
    const jobs: { entryId: string; f: Record<string, string>; request: RunRequest | Error }[] = [];
    for (const [entryId, list] of entries) {
      if (!list) {
        void cmd.xack(keys.jobs, keys.group, entryId).catch(() => {}); // deleted while pending
        continue;
      }
      const f = fields(list);
      let request: RunRequest | Error;
      try {
        request = JSON.parse(f.p ?? '{}') as RunRequest;
      } catch (e) {
        request = e as Error;
      }
      jobs.push({ entryId, f, request });
    }
    if (jobs.length === 0) return;
    const verdicts = (await cmd.eval(
      SCREEN,
      1 + 2 * jobs.length,
      keys.jobs,
      ...jobs.flatMap(({ entryId, f }) => [keys.done(f.j ?? entryId), f.l ?? '']),
      keys.group,
      ...jobs.flatMap(({ entryId, f, request }) => [
        entryId,
        f.d ?? '',
        request instanceof Error ? 0 : (request.timeoutMs ?? pool.config.timeoutMs),
      ]),
    )) as number[];
    jobs.forEach(({ entryId, f, request }, i) => {
      const verdict = verdicts[i];
      if (verdict === Screen.EXPIRED) skips.expired++;
      else if (verdict === Screen.ABANDONED) skips.abandoned++;
      else if (verdict === Screen.ANSWERED) skips.answered++;
      else if (verdict === Screen.CANCELLED) skips.cancelled++;
      if (verdict !== Screen.RUN) return;
      active.add(entryId);
      void process1(entryId, f, request).finally(() => {
        active.delete(entryId);
        wake?.();
      });
    });
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
  let lastReap = Date.now();
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
            await launch(await dropPoison(claimed));
            continue;
          }
          // Nothing left to retake: consumers that are silent and hold nothing are dead workers.
          if (Date.now() - lastReap > Math.min(reapAfterMs / 2, 5000)) {
            lastReap = Date.now();
            reaped += (await cmd.eval(REAP, 1, keys.jobs, keys.group, consumer, reapAfterMs)) as number;
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
        if (res) for (const [, entries] of res) await launch(entries);
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
    skipped: () => ({ ...skips }),
    reaped: () => reaped,
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
