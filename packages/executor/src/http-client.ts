import { Agent, errors, request } from 'undici';
import { Batcher } from './batcher.js';
import { type RemoteClientOptions, RemoteClientSchema } from './client-options.js';
import { parseConfig } from './config.js';
import { ExecutorError } from './errors.js';
import { runRemoteCall } from './remote-call.js';
import { answerEach, errorResult } from './requests.js';
import { Semaphore } from './semaphore.js';
import { StatsRecorder } from './stats.js';
import type { Executor, ExecutorStats, RunOptions, RunRequest, RunResult } from './types.js';

export interface HttpClientOptions extends Partial<RemoteClientOptions> {
  /** Base URL of an `agentrl-executor serve` server, e.g. http://127.0.0.1:8090 */
  url: string;
}

interface Pending {
  request: RunRequest;
  started: number;
  /** performance.now() past which the call ends (its deadlineMs, or timeoutMs + answerSlackMs). */
  expiresAt: number;
  attempts: number;
  /** Its signal aborted: answered already, not sent (again). */
  cancelled: boolean;
  resolve: (r: RunResult) => void;
}

/** Statuses after which the batch certainly did not run: always safe to resend. */
const RETRY_STATUS = new Set([429, 502, 503, 504]);

/**
 * Client of the executor's HTTP server. Calls are batched (batchSize / lingerMs) into POST /v1/run-batch,
 * capped at maxInFlight, and resent, with a capped exponential backoff, while the transport fails or the
 * server is overloaded, until the call's own deadline (a code run has no side effects outside its
 * sandbox, so a lost answer is recovered by running again; a received answer is never resent). Each call
 * tells the server how long it will wait, so a server in front of Redis answers DEADLINE before this
 * client gives up: one call is one job, never a resent copy of a job still waiting.
 */
export class HttpExecutor implements Executor {
  readonly mode = 'http' as const;
  private readonly opts: RemoteClientOptions;
  private readonly base: string;
  private readonly agent: Agent;
  private readonly batcher: Batcher<Pending>;
  private readonly gate: Semaphore;
  private readonly recorder = new StatsRecorder();
  private closed = false;
  /** Calls sent again after a lost answer or an overloaded server (one count per call and resend). */
  resent = 0;

  constructor(options: HttpClientOptions) {
    const { url, ...rest } = options;
    this.opts = parseConfig(RemoteClientSchema, rest, 'HTTP client options');
    this.base = url.replace(/\/+$/, '');
    this.agent = new Agent({ connections: 64, headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 10_000 });
    this.gate = new Semaphore(this.opts.maxInFlight);
    this.batcher = new Batcher(this.opts.batchSize, this.opts.lingerMs, (batch) => void this.send(batch));
  }

  run(req: RunRequest, options: RunOptions = {}): Promise<RunResult> {
    const ctx = { closed: this.closed, gate: this.gate, recorder: this.recorder, defaults: this.opts };
    return runRemoteCall(
      ctx,
      req,
      (request, started) =>
        new Promise<RunResult>((resolve) => {
          const budget = request.deadlineMs ?? (request.timeoutMs ?? 60_000) + this.opts.answerSlackMs;
          const expiresAt = performance.now() + budget;
          const { signal } = options;
          // The request on its way is not recalled (it may carry other calls); its answer is ignored.
          const onAbort = () => {
            p.cancelled = true;
            const err = new ExecutorError('CANCELLED', 'the call was cancelled by its caller');
            resolve(errorResult(err, performance.now() - started));
          };
          const p: Pending = {
            request,
            started,
            expiresAt,
            attempts: 0,
            cancelled: false,
            resolve: (r) => {
              signal?.removeEventListener('abort', onAbort);
              resolve(r);
            },
          };
          if (signal?.aborted) return onAbort();
          signal?.addEventListener('abort', onAbort, { once: true });
          this.batcher.push(p);
        }),
    );
  }

  /** Each call on its own: a malformed one is answered sandbox_error / INVALID_REQUEST, the others run. */
  runBatch(requests: readonly RunRequest[], options: RunOptions = {}): Promise<RunResult[]> {
    return answerEach(requests, (r) => this.run(r, options));
  }

  private async send(all: Pending[]): Promise<void> {
    const batch = all.filter((p) => !p.cancelled);
    if (batch.length === 0) return;
    const now = performance.now();
    const left = (p: Pending) => p.expiresAt - now;
    // The server gets the budget minus a margin for the way back; this client waits the margin longer.
    const margin = (p: Pending) => Math.min(2_000, Math.max(100, left(p) / 5));
    const wait = Math.max(...batch.map((p) => left(p) + margin(p)));
    try {
      const res = await request(`${this.base}/v1/run-batch`, {
        method: 'POST',
        dispatcher: this.agent,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          requests: batch.map((p) => ({
            ...p.request,
            deadlineMs: Math.max(1, Math.floor(left(p) - margin(p))),
          })),
        }),
        bodyTimeout: Math.max(1, Math.ceil(wait)),
        headersTimeout: Math.max(1, Math.ceil(wait)),
      });
      const text = await res.body.text();
      if (RETRY_STATUS.has(res.statusCode))
        throw new ExecutorError('QUEUE_FULL', `server answered ${res.statusCode} (overloaded)`);
      if (res.statusCode !== 200) {
        const err = new ExecutorError(
          'INVALID_REQUEST',
          `server answered ${res.statusCode}: ${text.slice(0, 500)}`,
        );
        for (const p of batch) p.resolve(errorResult(err, performance.now() - p.started));
        return;
      }
      const { results } = JSON.parse(text) as { results: RunResult[] };
      batch.forEach((p, i) => {
        const r = results[i] as RunResult;
        p.resolve({ ...r, latencyMs: performance.now() - p.started });
      });
    } catch (cause) {
      this.retryOrFail(batch, cause);
    }
  }

  /** Resends after a capped backoff the calls whose deadline leaves time for it; the others end here. */
  private retryOrFail(batch: Pending[], cause: unknown): void {
    const retry: Pending[] = [];
    let delay = 0;
    for (const p of batch) {
      p.attempts++;
      const backoff = Math.min(this.opts.retryBackoffMs * 2 ** (p.attempts - 1), this.opts.retryMaxBackoffMs);
      const inTime = performance.now() + backoff < p.expiresAt;
      const allowed = this.opts.retries === undefined || p.attempts <= this.opts.retries;
      if (!this.closed && inTime && allowed) {
        retry.push(p);
        delay = Math.max(delay, backoff);
        continue;
      }
      const why = (cause as Error).message;
      const waited = Math.round(performance.now() - p.started);
      const err =
        cause instanceof errors.HeadersTimeoutError || cause instanceof errors.BodyTimeoutError
          ? new ExecutorError(
              'DEADLINE',
              `${this.base} did not answer within ${waited} ms (the call's deadline); is it overloaded or stuck?`,
              { cause },
            )
          : new ExecutorError(
              'TRANSPORT',
              `no answer from ${this.base} after ${p.attempts} attempts in ${waited} ms (${why}); is the server running?`,
              { cause },
            );
      p.resolve(errorResult(err, performance.now() - p.started));
    }
    this.resent += retry.length;
    if (retry.length > 0) setTimeout(() => void this.send(retry), delay);
  }

  stats(): ExecutorStats {
    return this.recorder.snapshot();
  }

  /** Sends what is batched, waits for the requests in flight, then closes the connections (once). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.batcher.drain();
    this.closed = true;
    await this.agent.close();
  }
}
