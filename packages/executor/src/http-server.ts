import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { z } from 'zod';
import { codeJudgePlugin } from './compat/code-judge.js';
import type { CompatOptions } from './compat/fastapi.js';
import { sandboxFusionPlugin } from './compat/sandbox-fusion.js';
import { ExecutorError } from './errors.js';
import { ExecutorMetrics } from './metrics.js';
import { checkRequest } from './requests.js';
import type { Executor, RunRequest, RunResult } from './types.js';

/** Aborts when the caller hangs up before its answer is sent, so queued work it gave up is dropped. */
function hangUpSignal(reply: FastifyReply): AbortSignal {
  const ctl = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) ctl.abort();
  });
  return ctl.signal;
}

// Only the envelope is checked here: each call is checked on its own by the backend (checkRequest and its
// ceilings), so a malformed call is answered sandbox_error / INVALID_REQUEST and the rest of its batch runs.
const BatchSchema = z.object({ requests: z.array(z.unknown()) });

export interface HttpServerOptions {
  /** Where calls run: an embedded pool, or a Redis client that hands them to workers. */
  backend: Executor;
  /** Calls accepted and not answered at most; beyond it requests get 504 and clients retry later. */
  maxPending?: number;
  /** Largest request body in bytes. */
  bodyLimit?: number;
}

/**
 * The executor's HTTP API (fastify): its own batched API, code-judge's and SandboxFusion's shapes,
 * /health and Prometheus /metrics. On close it stops accepting and answers what it accepted.
 */
export function createHttpServer(options: HttpServerOptions): FastifyInstance {
  const { backend } = options;
  const maxPending = options.maxPending ?? 100_000;
  const metrics = new ExecutorMetrics();
  let pending = 0;
  const app = Fastify({
    bodyLimit: options.bodyLimit ?? 64 * 1024 * 1024,
    logger: false,
    // On close: finish requests in progress, drop idle keep-alive connections (or close() waits on them).
    forceCloseConnections: 'idle',
  });

  async function runAll(requests: RunRequest[], reply?: FastifyReply): Promise<RunResult[]> {
    pending += requests.length;
    metrics.inFlight.set(pending);
    const t0 = performance.now();
    try {
      const results = await backend.runBatch(requests, reply && { signal: hangUpSignal(reply) });
      for (const r of results) metrics.observe(r, (performance.now() - t0) / 1000);
      return results;
    } finally {
      pending -= requests.length;
      metrics.inFlight.set(pending);
    }
  }

  /**
   * Back-pressure: past maxPending, a request is refused with 504 and Retry-After, the status verl's
   * SandboxFusion client retries (`call_sandbox_api` in verl/utils/reward_score/sandbox_fusion/utils.py
   * retries 504 only); this package's client retries it too. Nothing refused has started.
   */
  function hasRoom(n: number): boolean {
    if (pending + n <= maxPending) return true;
    metrics.rejected.inc(n);
    return false;
  }
  function admit(n: number, reply: FastifyReply, body: Record<string, string>): boolean {
    if (hasRoom(n)) return true;
    reply.code(OVERLOADED).header('retry-after', '1').send(body);
    return false;
  }
  const FULL = { error: 'queue full; retry later' };
  const OVERLOADED = 504;

  app.setErrorHandler((error: Error & { statusCode?: number }, _req, reply) => {
    const status =
      error instanceof z.ZodError || error instanceof ExecutorError ? 400 : (error.statusCode ?? 500);
    reply.code(status).send({ error: error.message });
  });

  app.get('/health', async () => ({ status: 'ok', mode: backend.mode, pending }));
  app.get('/metrics', async (_req, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });

  app.post('/v1/run', async (req, reply) => {
    checkRequest(req.body); // a single call: a malformed one is the request's fault, 400
    if (!admit(1, reply, FULL)) return reply;
    return (await runAll([req.body], reply))[0];
  });
  app.post('/v1/run-batch', async (req, reply) => {
    const { requests } = BatchSchema.parse(req.body);
    if (!admit(requests.length, reply, FULL)) return reply;
    return { results: await runAll(requests as RunRequest[], reply) };
  });

  // The peers' APIs, each in its own plugin (own error shape): code-judge (rStar2-Agent), SandboxFusion (verl).
  const compat: CompatOptions = {
    runAll,
    admit: hasRoom,
    overloadStatus: OVERLOADED,
    pending: () => pending,
    workers: async () => (await backend.workers?.()) ?? 0,
  };
  app.register(codeJudgePlugin, compat);
  app.register(sandboxFusionPlugin, compat);

  return app;
}
