import type { FastifyInstance } from 'fastify';
import type { PoolConfigInput } from './config.js';
import { EmbeddedPool } from './embedded-pool.js';
import { createHttpServer } from './http-server.js';
import { RedisExecutor } from './redis-client.js';
import type { Executor } from './types.js';

export interface ServeOptions {
  port?: number;
  host?: string;
  /** Hand calls to workers through this Redis instead of running them in this process. */
  redis?: string;
  prefix?: string;
  /** Calls accepted and not yet answered at most; beyond it requests get 504 (clients retry). */
  maxPending?: number;
  /** With --redis: how long this front end's jobs outlive it if it is killed (see RedisClientSchema). */
  leaseMs?: number;
  /** With --redis: how long to wait for Redis to first answer. */
  connectTimeoutMs?: number;
  pool?: PoolConfigInput;
}

export interface RunningServer {
  url: string;
  app: FastifyInstance;
  backend: Executor;
  /** Stops accepting, answers the requests it accepted, then releases the backend. */
  close(): Promise<void>;
}

/** Starts the HTTP server (what `agentrl executor serve` runs). */
export async function serve(options: ServeOptions = {}): Promise<RunningServer> {
  const backend: Executor = options.redis
    ? await new RedisExecutor({
        redis: options.redis,
        prefix: options.prefix,
        leaseMs: options.leaseMs,
        connectTimeoutMs: options.connectTimeoutMs,
      }).connect()
    : await new EmbeddedPool(options.pool ?? {}).start();
  const app = createHttpServer({ backend, maxPending: options.maxPending });
  const address = await app.listen({ port: options.port ?? 8090, host: options.host ?? '127.0.0.1' });
  return {
    url: address,
    app,
    backend,
    async close() {
      // Keep-alive connections only become idle once their request is answered; close them as they do.
      const sweep = setInterval(() => app.server.closeIdleConnections(), 25);
      try {
        await app.close();
      } finally {
        clearInterval(sweep);
      }
      await backend.close();
    },
  };
}
