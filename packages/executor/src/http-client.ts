import { Agent, request } from 'undici';
import { Batcher } from './batcher.js';
import { type RemoteClientOptions, RemoteClientSchema } from './client-options.js';
import { parseConfig } from './config.js';
import { ExecutorError } from './errors.js';
import { runRemoteCall } from './remote-call.js';
import { errorResult } from './requests.js';
import { Semaphore } from './semaphore.js';
import { StatsRecorder } from './stats.js';
import type { Executor, ExecutorStats, RunRequest, RunResult } from './types.js';

export interface HttpClientOptions extends Partial<RemoteClientOptions> {
  /** Base URL of an `agentrl-executor serve` server, e.g. http://127.0.0.1:8090 */
  url: string;
}

interface Pending {
  request: RunRequest;
  started: number;
  attempts: number;
  resolve: (r: RunResult) => void;
}

/** Statuses after which the batch certainly did not run: always safe to resend. */
const RETRY_STATUS = new Set([429, 502, 503, 504]);

/**
 * Client of the executor's HTTP server. Calls are batched (batchSize / lingerMs) into POST /v1/run-batch,
 * capped at maxInFlight, and resent when the transport fails (a code run has no side effects outside its
 * sandbox, so a lost answer is recovered by running again; a received answer is never resent).
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

  constructor(options: HttpClientOptions) {
    const { url, ...rest } = options;
    this.opts = parseConfig(RemoteClientSchema, rest, 'HTTP client options');
    this.base = url.replace(/\/+$/, '');
    this.agent = new Agent({ connections: 64, headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 10_000 });
    this.gate = new Semaphore(this.opts.maxInFlight);
    this.batcher = new Batcher(this.opts.batchSize, this.opts.lingerMs, (batch) => void this.send(batch));
  }

  run(req: RunRequest): Promise<RunResult> {
    const ctx = { closed: this.closed, gate: this.gate, recorder: this.recorder, defaults: this.opts };
    return runRemoteCall(
      ctx,
      req,
      (request, started) =>
        new Promise<RunResult>((resolve) => {
          this.batcher.push({ request, started, attempts: 0, resolve });
        }),
    );
  }

  runBatch(requests: readonly RunRequest[]): Promise<RunResult[]> {
    return Promise.all(requests.map((r) => this.run(r)));
  }

  private async send(batch: Pending[]): Promise<void> {
    const longest = Math.max(...batch.map((p) => p.request.timeoutMs ?? 60_000));
    try {
      const res = await request(`${this.base}/v1/run-batch`, {
        method: 'POST',
        dispatcher: this.agent,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ requests: batch.map((p) => p.request) }),
        bodyTimeout: longest + this.opts.answerSlackMs,
        headersTimeout: longest + this.opts.answerSlackMs,
      });
      const text = await res.body.text();
      if (RETRY_STATUS.has(res.statusCode))
        throw new ExecutorError('QUEUE_FULL', `server answered ${res.statusCode}`);
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
      const retry: Pending[] = [];
      for (const p of batch) {
        if (!this.closed && p.attempts < this.opts.retries) {
          p.attempts++;
          retry.push(p);
        } else {
          const err = new ExecutorError(
            'TRANSPORT',
            `no answer from ${this.base} after ${p.attempts + 1} attempts (${(cause as Error).message}); is the server running?`,
            { cause },
          );
          p.resolve(errorResult(err, performance.now() - p.started));
        }
      }
      if (retry.length > 0) {
        const delay = this.opts.retryBackoffMs * 2 ** ((retry[0] as Pending).attempts - 1);
        setTimeout(() => void this.send(retry), delay);
      }
    }
  }

  stats(): ExecutorStats {
    return this.recorder.snapshot();
  }

  /** Sends what is batched, waits for the requests in flight, then closes the connections. */
  async close(): Promise<void> {
    this.batcher.drain();
    this.closed = true;
    await this.agent.close();
  }
}
