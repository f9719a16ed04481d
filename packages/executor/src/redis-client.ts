import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { Batcher } from './batcher.js';
import { RemoteClientSchema } from './client-options.js';
import { parseConfig } from './config.js';
import { ExecutorError } from './errors.js';
import { connectRedis, ENQUEUE, fields, redisKeys } from './redis-scripts.js';
import { runRemoteCall } from './remote-call.js';
import { errorResult } from './requests.js';
import { Semaphore } from './semaphore.js';
import { StatsRecorder } from './stats.js';
import type { Executor, ExecutorStats, RunRequest, RunResult } from './types.js';

export const RedisClientSchema = RemoteClientSchema.extend({
  redis: z.string().describe('Redis URL, e.g. redis://127.0.0.1:6379'),
  prefix: z
    .string()
    .default('agentrl:exec:')
    .describe('key prefix shared by clients and workers of one deployment'),
  maxQueued: z
    .number()
    .int()
    .min(1)
    .default(100_000)
    .describe('jobs waiting in Redis at most; beyond it clients wait (back-pressure)'),
  connectTimeoutMs: z
    .number()
    .int()
    .positive()
    .default(5_000)
    .describe(
      'how long connect() waits for Redis to first answer before failing; later outages are waited out',
    ),
});
export type RedisClientOptions = z.input<typeof RedisClientSchema>;

interface Pending {
  jobId: string;
  payload: string;
  request: RunRequest;
  started: number;
  deadline: NodeJS.Timeout | undefined;
  resolve: (r: RunResult) => void;
}

/**
 * Client of the distributed executor: pushes batches of jobs to a Redis stream (workers take them with a
 * consumer group) and reads answers from its own reply stream. Each job is answered to the caller exactly
 * once: duplicates from re-runs are dropped, and a job lost with a restarted Redis is resubmitted; one
 * that no worker answers in time fails with a DEADLINE error.
 */
export class RedisExecutor implements Executor {
  readonly mode = 'redis' as const;
  private readonly opts: z.infer<typeof RedisClientSchema>;
  private readonly keys: ReturnType<typeof redisKeys>;
  private readonly clientId = randomUUID();
  private readonly replyKey: string;
  private readonly cmd: Redis;
  private readonly reader: Redis;
  private readonly pending = new Map<string, Pending>();
  private readonly batcher: Batcher<Pending>;
  private readonly gate: Semaphore;
  private readonly recorder = new StatsRecorder();
  private lastId = '0-0';
  private runId: string | undefined;
  private closed = false;
  private readLoop: Promise<void> | undefined;
  private epochCheck: Promise<void> = Promise.resolve();
  /** Jobs resubmitted because Redis lost them (restart without persistence). */
  resubmitted = 0;
  /** Answers that arrived for a job already answered (re-runs), dropped. */
  duplicates = 0;

  constructor(options: RedisClientOptions) {
    this.opts = parseConfig(RedisClientSchema, options, 'Redis client options');
    this.keys = redisKeys(this.opts.prefix);
    this.replyKey = this.keys.reply(this.clientId);
    this.cmd = connectRedis(this.opts.redis);
    this.reader = connectRedis(this.opts.redis);
    for (const conn of [this.cmd, this.reader]) {
      conn.on('error', () => {}); // reconnects on its own; calls wait meanwhile
      conn.on('ready', () => void this.checkEpoch());
    }
    this.gate = new Semaphore(this.opts.maxInFlight);
    this.batcher = new Batcher(this.opts.batchSize, this.opts.lingerMs, (b) => void this.enqueue(b));
  }

  /** Waits for Redis and starts reading answers. */
  async connect(): Promise<this> {
    // The connections retry forever (so a Redis restart mid-run is waited out), which would make a
    // first connect to a dead address hang: the first answer gets a deadline of its own.
    let lastError: unknown;
    const onError = (err: unknown) => {
      lastError = err;
    };
    this.cmd.on('error', onError);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.cmd.ping(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(lastError ?? new Error('no answer')), this.opts.connectTimeoutMs);
        }),
      ]);
    } catch (cause) {
      this.closed = true;
      this.cmd.disconnect();
      this.reader.disconnect();
      const why = cause instanceof Error ? cause.message : String(cause);
      throw new ExecutorError(
        'TRANSPORT',
        `Redis at ${this.opts.redis} did not answer within ${this.opts.connectTimeoutMs} ms (${why}); start redis-server or leave --redis unset for the embedded pool`,
        { cause },
      );
    } finally {
      clearTimeout(timer);
      this.cmd.off('error', onError);
    }
    await this.checkEpoch();
    this.readLoop ??= this.readAnswers();
    return this;
  }

  run(req: RunRequest): Promise<RunResult> {
    if (!this.closed) this.readLoop ??= this.readAnswers();
    const ctx = { closed: this.closed, gate: this.gate, recorder: this.recorder, defaults: this.opts };
    return runRemoteCall(
      ctx,
      req,
      (request, started) =>
        new Promise<RunResult>((resolve) => {
          const jobId = randomUUID();
          const p: Pending = {
            jobId,
            payload: JSON.stringify(request),
            request,
            started,
            deadline: undefined,
            resolve,
          };
          this.pending.set(jobId, p);
          this.batcher.push(p);
        }),
    );
  }

  runBatch(requests: readonly RunRequest[]): Promise<RunResult[]> {
    return Promise.all(requests.map((r) => this.run(r)));
  }

  private async enqueue(batch: Pending[]): Promise<void> {
    let wait = 10;
    for (;;) {
      const live = batch.filter((p) => this.pending.has(p.jobId));
      if (live.length === 0 || this.closed) return;
      const args = live.flatMap((p) => [p.jobId, this.replyKey, p.payload]);
      try {
        const added = (await this.cmd.eval(
          ENQUEUE,
          1,
          this.keys.jobs,
          this.opts.maxQueued,
          ...args,
        )) as number;
        if (added >= 0) {
          for (const p of live) this.armDeadline(p);
          return;
        }
      } catch {
        // Redis is away; ioredis reconnects, and the loop tries again.
      }
      await sleep(wait); // queue full or Redis away: wait, never drop
      wait = Math.min(wait * 2, 250);
    }
  }

  private armDeadline(p: Pending): void {
    if (p.deadline) clearTimeout(p.deadline);
    const limit = (p.request.timeoutMs ?? 60_000) + this.opts.answerSlackMs;
    p.deadline = setTimeout(() => {
      const err = new ExecutorError(
        'DEADLINE',
        `no worker answered job ${p.jobId} within ${limit} ms; are workers running (agentrl-executor worker --redis ...)?`,
      );
      this.answer(p.jobId, errorResult(err, performance.now() - p.started));
    }, limit);
  }

  private answer(jobId: string, result: RunResult): void {
    const p = this.pending.get(jobId);
    if (!p) {
      this.duplicates++;
      return;
    }
    this.pending.delete(jobId);
    if (p.deadline) clearTimeout(p.deadline);
    p.resolve({ ...result, latencyMs: performance.now() - p.started });
  }

  /** A different run_id means Redis restarted: what it held is gone, so resubmit what is unanswered. */
  private checkEpoch(): Promise<void> {
    // Both connections report 'ready' after a restart: serialise, so the jobs are resubmitted once.
    this.epochCheck = this.epochCheck.then(() => this.compareRunId());
    return this.epochCheck;
  }

  private async compareRunId(): Promise<void> {
    try {
      const info = await this.cmd.info('server');
      const runId = /run_id:(\w+)/.exec(info)?.[1];
      if (this.runId !== undefined && runId !== this.runId) {
        this.lastId = '0-0';
        const lost = [...this.pending.values()];
        this.resubmitted += lost.length;
        for (let i = 0; i < lost.length; i += this.opts.batchSize) {
          void this.enqueue(lost.slice(i, i + this.opts.batchSize));
        }
      }
      this.runId = runId;
    } catch {
      // not connected yet; the next 'ready' checks again
    }
  }

  private async readAnswers(): Promise<void> {
    while (!this.closed) {
      try {
        const res = (await this.reader.xread(
          'COUNT',
          1024,
          'BLOCK',
          500,
          'STREAMS',
          this.replyKey,
          this.lastId,
        )) as [string, [string, string[]][]][] | null;
        if (!res) continue;
        for (const [, entries] of res) {
          for (const [id, list] of entries) {
            const f = fields(list);
            this.lastId = id;
            if (f.j && f.r) this.answer(f.j, JSON.parse(f.r) as RunResult);
          }
        }
        void this.cmd.xtrim(this.replyKey, 'MINID', bumpId(this.lastId)).catch(() => {});
      } catch {
        if (!this.closed) await sleep(100);
      }
    }
  }

  /** Consumers of the job stream that polled in the last 10 s (workers poll every 250 ms). */
  async workers(): Promise<number> {
    try {
      const consumers = (await this.cmd.xinfo('CONSUMERS', this.keys.jobs, this.keys.group)) as unknown[][];
      return consumers.filter((c) => Number(fields(c.map(String)).idle) < 10_000).length;
    } catch {
      return 0; // no stream or group yet
    }
  }

  stats(): ExecutorStats {
    return this.recorder.snapshot();
  }

  /** Calls waiting for an answer now. */
  get unanswered(): number {
    return this.pending.size;
  }

  /** Waits for the calls already made (each ends by its deadline at the latest), then disconnects. */
  async close(): Promise<void> {
    this.batcher.drain();
    while (this.pending.size > 0 && !this.closed) await sleep(20);
    this.closed = true;
    await this.readLoop;
    await Promise.allSettled([this.cmd.del(this.replyKey)]);
    this.cmd.disconnect();
    this.reader.disconnect();
  }
}

/** The smallest stream id after `id` (XTRIM MINID keeps ids >= the argument). */
function bumpId(id: string): string {
  const [ms, seq] = id.split('-');
  return `${ms}-${Number(seq ?? 0) + 1}`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
