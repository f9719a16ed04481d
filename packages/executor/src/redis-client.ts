import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { Batcher } from './batcher.js';
import { RemoteClientSchema } from './client-options.js';
import { parseConfig } from './config.js';
import { ExecutorError } from './errors.js';
import {
  CANCELLED_MARK,
  ConnectTimeoutSchema,
  connectRedis,
  ENQUEUE,
  fields,
  firstAnswer,
  PrefixSchema,
  RENEW,
  redisKeys,
} from './redis-scripts.js';
import { runRemoteCall } from './remote-call.js';
import { answerEach, errorResult } from './requests.js';
import { Semaphore } from './semaphore.js';
import { StatsRecorder } from './stats.js';
import type { Executor, ExecutorStats, RunOptions, RunRequest, RunResult } from './types.js';

export const RedisClientSchema = RemoteClientSchema.extend({
  redis: z.string().describe('Redis URL, e.g. redis://127.0.0.1:6379'),
  prefix: PrefixSchema,
  maxQueued: z
    .number()
    .int()
    .min(1)
    .default(100_000)
    .describe('jobs waiting in Redis at most; beyond it clients wait (back-pressure)'),
  connectTimeoutMs: ConnectTimeoutSchema,
  leaseMs: z
    .number()
    .int()
    .min(300)
    .max(3_600_000)
    .default(15_000)
    .describe(
      'how long this client is taken for alive after its last renewal (every leaseMs / 3): once it lapses (client killed or closed), workers skip its jobs and drop their answers, and its reply stream expires',
    ),
});
export type RedisClientOptions = z.input<typeof RedisClientSchema>;

interface Pending {
  jobId: string;
  payload: string;
  request: RunRequest;
  started: number;
  /** performance.now() past which the call ends with DEADLINE; set at run() or at the first enqueue. */
  expiresAt: number | undefined;
  /** In Redis (or lost with it): a lapsed lease or a restart resubmits it. */
  enqueued: boolean;
  deadline: NodeJS.Timeout | undefined;
  cancelled: boolean;
  /** Removes the abort listener of the call's signal, if any. */
  unlisten: (() => void) | undefined;
  resolve: (r: RunResult) => void;
}

/**
 * Client of the distributed executor: pushes batches of jobs to a Redis stream (workers take them with a
 * consumer group) and reads answers from its own reply stream. Each job is answered to the caller exactly
 * once: duplicates from re-runs are dropped, and a job lost with a restarted Redis is resubmitted; one
 * that no worker answers by its deadline fails with a DEADLINE error, and no worker starts it afterwards.
 */
export class RedisExecutor implements Executor {
  readonly mode = 'redis' as const;
  private readonly opts: z.infer<typeof RedisClientSchema>;
  private readonly keys: ReturnType<typeof redisKeys>;
  private readonly clientId = randomUUID();
  private readonly replyKey: string;
  private readonly leaseKey: string;
  private readonly cmd: Redis;
  private readonly reader: Redis;
  private readonly pending = new Map<string, Pending>();
  private readonly batcher: Batcher<Pending>;
  private readonly gate: Semaphore;
  private readonly recorder = new StatsRecorder();
  private readonly renewal: NodeJS.Timeout;
  private lastId = '0-0';
  private runId: string | undefined;
  /** A lease was taken once: from then on a missing one means it lapsed. */
  private leased = false;
  private closed = false;
  private readLoop: Promise<void> | undefined;
  private syncing: Promise<void> = Promise.resolve();
  /** Jobs resubmitted because Redis lost them (restart without persistence) or the lease lapsed. */
  resubmitted = 0;
  /** Answers that arrived for a job already answered (re-runs, or after its DEADLINE), dropped. */
  duplicates = 0;

  constructor(options: RedisClientOptions) {
    this.opts = parseConfig(RedisClientSchema, options, 'Redis client options');
    this.keys = redisKeys(this.opts.prefix);
    this.replyKey = this.keys.reply(this.clientId);
    this.leaseKey = this.keys.lease(this.clientId);
    this.cmd = connectRedis(this.opts.redis);
    this.reader = connectRedis(this.opts.redis);
    for (const conn of [this.cmd, this.reader]) {
      conn.on('error', () => {}); // reconnects on its own; calls wait meanwhile
      conn.on('ready', () => void this.sync());
    }
    this.renewal = setInterval(() => void this.sync(), Math.floor(this.opts.leaseMs / 3));
    this.renewal.unref();
    this.gate = new Semaphore(this.opts.maxInFlight);
    this.batcher = new Batcher(this.opts.batchSize, this.opts.lingerMs, (b) => void this.enqueue(b));
  }

  /** Waits for Redis (at most connectTimeoutMs) and starts reading answers. */
  async connect(): Promise<this> {
    try {
      await firstAnswer(
        this.cmd,
        this.opts.redis,
        this.opts.connectTimeoutMs,
        'start redis-server or leave --redis unset for the embedded pool',
      );
    } catch (e) {
      this.closed = true;
      clearInterval(this.renewal);
      this.cmd.disconnect();
      this.reader.disconnect();
      throw e;
    }
    await this.sync();
    this.readLoop ??= this.readAnswers();
    return this;
  }

  run(req: RunRequest, options: RunOptions = {}): Promise<RunResult> {
    if (!this.closed) this.readLoop ??= this.readAnswers();
    const ctx = { closed: this.closed, gate: this.gate, recorder: this.recorder, defaults: this.opts };
    return runRemoteCall(
      ctx,
      req,
      ({ deadlineMs, ...job }, started) =>
        new Promise<RunResult>((resolve) => {
          const jobId = randomUUID();
          const p: Pending = {
            jobId,
            payload: JSON.stringify(job),
            request: job,
            started,
            // An explicit deadline counts from now; the default one from the first enqueue, so waiting
            // on a full queue (back-pressure) never fails a call.
            expiresAt: deadlineMs === undefined ? undefined : performance.now() + deadlineMs,
            enqueued: false,
            deadline: undefined,
            cancelled: false,
            unlisten: undefined,
            resolve,
          };
          this.pending.set(jobId, p);
          const { signal } = options;
          if (signal) {
            const onAbort = () => this.cancel(p);
            if (signal.aborted) return onAbort();
            signal.addEventListener('abort', onAbort, { once: true });
            p.unlisten = () => signal.removeEventListener('abort', onAbort);
          }
          if (p.expiresAt !== undefined) this.armDeadline(p, p.expiresAt);
          this.batcher.push(p);
        }),
    );
  }

  /** Each call on its own: a malformed one is answered sandbox_error / INVALID_REQUEST, the others run. */
  runBatch(requests: readonly RunRequest[], options: RunOptions = {}): Promise<RunResult[]> {
    return answerEach(requests, (r) => this.run(r, options));
  }

  /** Gives a call up: answers it now, and marks its job done so that no worker starts it. */
  private cancel(p: Pending): void {
    if (!this.pending.has(p.jobId)) return;
    p.cancelled = true;
    const err = new ExecutorError('CANCELLED', `job ${p.jobId} was cancelled by its caller`);
    this.answer(p.jobId, errorResult(err, performance.now() - p.started));
    if (p.enqueued) this.markCancelled(p);
  }

  /** The done marker, set to 'cancelled' until the job's deadline has passed (and a minute more). */
  private markCancelled(p: Pending): void {
    const ttl = Math.ceil(((p.expiresAt ?? performance.now()) - performance.now()) / 1000) + 60;
    void this.cmd.set(this.keys.done(p.jobId), CANCELLED_MARK, 'EX', ttl, 'NX').catch(() => {});
  }

  /** How long a call may wait for its answer by default: its time limit plus answerSlackMs. */
  private limitOf(p: Pending): number {
    return (p.request.timeoutMs ?? 60_000) + this.opts.answerSlackMs;
  }

  private async enqueue(batch: Pending[]): Promise<void> {
    let wait = 10;
    for (;;) {
      const live = batch.filter((p) => this.pending.has(p.jobId));
      if (live.length === 0 || this.closed) return;
      const now = performance.now();
      const args = live.flatMap((p) => [
        p.jobId,
        Math.max(0, Math.round((p.expiresAt ?? now + this.limitOf(p)) - now)),
        p.payload,
      ]);
      try {
        const [added, had] = (await this.cmd.eval(
          ENQUEUE,
          2,
          this.keys.jobs,
          this.leaseKey,
          this.opts.maxQueued,
          this.replyKey,
          this.opts.leaseMs,
          ...args,
        )) as [number, number];
        this.noteLease(had === 1);
        if (added >= 0) {
          for (const p of live) {
            p.enqueued = true;
            if (p.cancelled) this.markCancelled(p); // cancelled while the enqueue was on its way
            if (p.expiresAt === undefined) {
              p.expiresAt = now + this.limitOf(p);
              this.armDeadline(p, p.expiresAt);
            }
          }
          return;
        }
      } catch {
        // Redis is away; ioredis reconnects, and the loop tries again.
      }
      await sleep(wait); // queue full or Redis away: wait, never drop (a call's deadline still ends it)
      wait = Math.min(wait * 2, 250);
    }
  }

  private armDeadline(p: Pending, at: number): void {
    const limit = Math.round(at - p.started);
    p.deadline = setTimeout(
      () => {
        const err = new ExecutorError(
          'DEADLINE',
          `no worker answered job ${p.jobId} within ${limit} ms; are workers running (agentrl-executor worker --redis ...)?`,
        );
        this.answer(p.jobId, errorResult(err, performance.now() - p.started));
      },
      Math.max(0, at - performance.now()),
    );
  }

  private answer(jobId: string, result: RunResult): void {
    const p = this.pending.get(jobId);
    if (!p) {
      this.duplicates++;
      return;
    }
    this.pending.delete(jobId);
    if (p.deadline) clearTimeout(p.deadline);
    p.unlisten?.();
    p.resolve({ ...result, latencyMs: performance.now() - p.started });
  }

  /**
   * Renews the lease; a lapsed lease (Redis restarted empty, or unreachable for longer than leaseMs)
   * means workers may have dropped our jobs, so what is unanswered is resubmitted (under the same job
   * ids: a copy that was answered already is skipped by the workers). Serialised: both connections
   * report 'ready' after a restart.
   */
  private sync(): Promise<void> {
    this.syncing = this.syncing.then(() => this.renew());
    return this.syncing;
  }

  private async renew(): Promise<void> {
    if (this.closed) return;
    try {
      const info = await this.cmd.info('server');
      const runId = /run_id:(\w+)/.exec(info)?.[1];
      if (this.runId !== undefined && runId !== this.runId) this.lastId = '0-0'; // a new reply stream
      this.runId = runId;
      if (this.closed) return; // close() deletes the lease after this point; do not bring it back
      const had = await this.cmd.eval(RENEW, 2, this.leaseKey, this.replyKey, this.opts.leaseMs);
      this.noteLease(had === 1);
    } catch {
      // not connected; the next 'ready' or renewal tries again
    }
  }

  private noteLease(existed: boolean): void {
    const lapsed = this.leased && !existed;
    this.leased = true;
    if (!lapsed) return;
    const lost = [...this.pending.values()].filter((p) => p.enqueued);
    this.resubmitted += lost.length;
    for (let i = 0; i < lost.length; i += this.opts.batchSize) {
      void this.enqueue(lost.slice(i, i + this.opts.batchSize));
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

  /**
   * Waits for the calls already made (each ends by its deadline at the latest), then drops the lease
   * and the reply stream (workers then skip whatever of ours is left) and disconnects.
   */
  async close(): Promise<void> {
    this.batcher.drain();
    while (this.pending.size > 0 && !this.closed) await sleep(20);
    this.closed = true;
    clearInterval(this.renewal);
    await this.readLoop;
    await Promise.allSettled([this.cmd.del(this.replyKey, this.leaseKey)]);
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
