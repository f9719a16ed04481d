import { Redis, type RedisOptions } from 'ioredis';

/** Key names under one prefix (several deployments or test runs can share a Redis). */
export function redisKeys(prefix: string) {
  return {
    jobs: `${prefix}jobs`,
    group: 'workers',
    done: (jobId: string) => `${prefix}done:${jobId}`,
    reply: (clientId: string) => `${prefix}reply:${clientId}`,
  };
}

/**
 * Adds a batch of jobs unless the queue is full (all or nothing, atomically). Returns how many were
 * added, or -1 when full: the caller waits and retries, so work is delayed, never dropped. A batch is
 * admitted into an empty queue even when larger than the limit, so no batch waits forever.
 * KEYS[1] jobs; ARGV[1] max queued; ARGV[2..] jobId, replyKey, payload triples.
 */
export const ENQUEUE = `
local n = (#ARGV - 1) / 3
local len = redis.call('XLEN', KEYS[1])
if len > 0 and len + n > tonumber(ARGV[1]) then return -1 end
for i = 0, n - 1 do
  redis.call('XADD', KEYS[1], '*', 'j', ARGV[2 + 3*i], 'r', ARGV[3 + 3*i], 'p', ARGV[4 + 3*i])
end
return n`;

/**
 * Publishes a job's result once (the first finisher wins, a re-run after a reclaim is dropped here),
 * then acknowledges and deletes the job entry.
 * KEYS[1] jobs, KEYS[2] done marker, KEYS[3] reply stream; ARGV group, entryId, jobId, result, ttlSeconds.
 */
export const COMPLETE = `
local first = redis.call('SET', KEYS[2], '1', 'NX', 'EX', tonumber(ARGV[5]))
if first then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', '1000000', '*', 'j', ARGV[3], 'r', ARGV[4])
  redis.call('EXPIRE', KEYS[3], 86400)
end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
if first then return 1 else return 0 end`;

/** A connection that waits (and reconnects) through Redis restarts instead of failing commands. */
export function connectRedis(url: string, extra: RedisOptions = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy: (times) => Math.min(50 * 2 ** times, 1000),
    lazyConnect: false,
    ...extra,
  });
}

/** Flat [k, v, k, v] stream fields to an object. */
export function fields(list: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < list.length; i += 2) out[list[i] as string] = list[i + 1] as string;
  return out;
}
