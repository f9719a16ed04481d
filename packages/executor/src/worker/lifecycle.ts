import type { Redis } from 'ioredis';
import type { PoolConfigInput } from '../config.js';
import { EmbeddedPool } from '../embedded-pool.js';
import { connectRedis, firstAnswer, type redisKeys } from '../redis-scripts.js';
import type { WorkerContext } from './context.js';
import type { WorkerConfig } from './options.js';

/**
 * Redis first (it fails fast on a wrong address), then the pool (which takes seconds to warm); on a
 * failure of either, what was opened is closed before the error goes up.
 */
export async function openWorker(
  opts: WorkerConfig,
  poolInput: PoolConfigInput | undefined,
): Promise<{ blocking: Redis; cmd: Redis; pool: EmbeddedPool }> {
  const blocking: Redis = connectRedis(opts.redis);
  const cmd: Redis = connectRedis(opts.redis);
  for (const c of [blocking, cmd]) c.on('error', () => {});
  try {
    await firstAnswer(cmd, opts.redis, opts.connectTimeoutMs, 'start redis-server or fix --redis');
    const pool = await new EmbeddedPool(poolInput ?? {}).start();
    return { blocking, cmd, pool };
  } catch (e) {
    blocking.disconnect();
    cmd.disconnect();
    throw e;
  }
}

/** Creates the consumer group (and the stream) unless it exists: at start, and after Redis restarted empty. */
export async function ensureGroup(cmd: Redis, keys: ReturnType<typeof redisKeys>): Promise<void> {
  try {
    await cmd.xgroup('CREATE', keys.jobs, keys.group, '0', 'MKSTREAM');
  } catch (e) {
    if (!String((e as Error).message).includes('BUSYGROUP')) throw e;
  }
}

/** Stops taking jobs, waits for the ones held to be answered, then closes the pool and the connections. */
export async function stopWorker(ctx: WorkerContext, loop: Promise<void>, heartbeat: NodeJS.Timeout) {
  ctx.stopping = true;
  ctx.wake?.();
  await loop;
  while (ctx.active.size > 0) await new Promise((r) => setTimeout(r, 20));
  clearInterval(heartbeat);
  await ctx.pool.close();
  ctx.blocking.disconnect();
  ctx.cmd.disconnect();
}
