import type { Model, Tokenizer } from '@agentrl/engine';
import Fastify, { type FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ServerContext } from './context.js';
import { EngineServerError, vllmError } from './errors.js';
import { ServerMetrics } from './metrics.js';
import { chatRoutes } from './routes/chat.js';
import { completionRoutes } from './routes/completions.js';
import { generateRoutes } from './routes/generate.js';
import { infoRoutes } from './routes/info.js';
import { memoryRoutes } from './routes/memory.js';
import { tokenizeRoutes } from './routes/tokenize.js';
import { weightRoutes } from './routes/weights.js';
import { ServedEngine } from './served-engine.js';
import { createTextCodec } from './text.js';

export interface EngineServerOptions {
  model: Model;
  tokenizer: Tokenizer;
  /** the checkpoint directory (vLLM's reload re-reads it; reported as model_path) */
  modelPath: string;
  /** the name clients send as `model` (`--served-model-name`); default the directory path */
  servedModelName?: string;
  /** KV-cache figures reported at /metrics and /get_server_info */
  kvBlockSize?: number;
  kvCapacityTokens?: number;
  /** most requests decoded in one batch */
  maxBatch?: number;
  /** largest request body in bytes (default 64 MiB) */
  bodyLimit?: number;
}

export interface EngineServer {
  readonly app: FastifyInstance;
  readonly served: ServedEngine;
  readonly modelName: string;
  close(): Promise<void>;
}

/**
 * The engine server as a fastify app: one plugin per API surface (completions, chat, SGLang
 * generate, tokenize, weights, info + metrics), errors in vLLM's `ErrorResponse` shape.
 */
export function createEngineServer(options: EngineServerOptions): EngineServer {
  const served = new ServedEngine(options.model, options.tokenizer, options.modelPath, {
    ...(options.maxBatch !== undefined ? { maxBatch: options.maxBatch } : {}),
  });
  const modelName = options.servedModelName ?? options.modelPath;
  const kvCapacityTokens = options.kvCapacityTokens ?? 65_536;
  const metrics = new ServerMetrics(served, modelName, {
    blockSize: options.kvBlockSize ?? 16,
    capacityTokens: kvCapacityTokens,
  });
  const ctx: ServerContext = {
    served,
    tokenizer: options.tokenizer,
    codec: createTextCodec(options.tokenizer),
    modelName,
    metrics,
    eosIds: options.tokenizer.stopTokenIds ?? [options.tokenizer.eosTokenId],
  };
  const app = Fastify({
    bodyLimit: options.bodyLimit ?? 64 * 1024 * 1024,
    logger: false,
    forceCloseConnections: true,
  });
  app.setErrorHandler((error: Error & { statusCode?: number }, _req, reply) => {
    const status =
      error instanceof z.ZodError
        ? 400
        : error instanceof EngineServerError
          ? error.status
          : (error.statusCode ?? 500);
    const message =
      error instanceof z.ZodError
        ? `invalid request: ${error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ')}`
        : error.message;
    reply.code(status).send(vllmError(status, message));
  });
  app.register(async (a) => infoRoutes(a, ctx, kvCapacityTokens));
  app.register(async (a) => completionRoutes(a, ctx));
  app.register(async (a) => chatRoutes(a, ctx));
  app.register(async (a) => generateRoutes(a, ctx));
  app.register(async (a) => tokenizeRoutes(a, ctx));
  app.register(async (a) => weightRoutes(a, ctx));
  app.register(async (a) => memoryRoutes(a, ctx));
  return {
    app,
    served,
    modelName,
    async close() {
      served.abort();
      await app.close();
      await served.close();
    },
  };
}

/** Starts the server on host:port (port 0: any free port) and returns its URL. */
export async function startEngineServer(
  options: EngineServerOptions & { host?: string; port?: number },
): Promise<EngineServer & { url: string }> {
  const server = createEngineServer(options);
  const url = await server.app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 });
  return Object.assign(server, { url: url.replace('[::1]', '127.0.0.1') });
}
