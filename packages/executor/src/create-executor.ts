import { type PoolConfigInput, PoolSchema } from './config.js';
import { EmbeddedPool } from './embedded-pool.js';
import { type HttpClientOptions, HttpExecutor } from './http-client.js';
import { type RedisClientOptions, RedisExecutor } from './redis-client.js';
import type { Executor } from './types.js';

export type ExecutorMode = 'embedded' | { url: string } | { redis: string };

export type CreateExecutorOptions = PoolConfigInput &
  Partial<Omit<HttpClientOptions, 'url'>> &
  Partial<Omit<RedisClientOptions, 'redis'>> & {
    /** embedded (default): in-process pool; { url }: an executor HTTP server; { redis }: workers behind Redis. */
    mode?: ExecutorMode;
  };

/**
 * Creates an executor. The same run/runBatch/close API whatever the mode:
 * `await createExecutor({ mode: 'embedded' })`, `{ mode: { url: 'http://host:8090' } }`,
 * `{ mode: { redis: 'redis://host:6379' } }`. Embedded pools are warm (imports done) when this resolves.
 */
export async function createExecutor(options: CreateExecutorOptions = {}): Promise<Executor> {
  const { mode = 'embedded', ...rest } = options;
  if (mode === 'embedded') return new EmbeddedPool(pickPool(rest)).start();
  if ('url' in mode) return new HttpExecutor({ ...rest, url: mode.url });
  return new RedisExecutor({ ...rest, redis: mode.redis }).connect();
}

/** The pool's own options, taken by the schema's keys so that none (like `servers`) is ever dropped. */
function pickPool(o: Record<string, unknown>): PoolConfigInput {
  const keys = new Set(Object.keys(PoolSchema.shape));
  return Object.fromEntries(Object.entries(o).filter(([k, v]) => keys.has(k) && v !== undefined));
}
