import { z } from 'zod';
import type { PoolConfigInput } from '../config.js';
import type { EmbeddedPool } from '../embedded-pool.js';
import { ConnectTimeoutSchema, PrefixSchema } from '../redis-scripts.js';

export const WorkerSchema = z.object({
  redis: z.string().describe('Redis URL shared with the servers/clients'),
  prefix: PrefixSchema,
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
export type WorkerConfig = z.output<typeof WorkerSchema>;

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
