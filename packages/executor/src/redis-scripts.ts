import { Redis, type RedisOptions } from 'ioredis';
import { z } from 'zod';
import { ExecutorError } from './errors.js';

/** Key names under one prefix (several deployments or test runs can share a Redis). */
export function redisKeys(prefix: string) {
  return {
    jobs: `${prefix}jobs`,
    group: 'workers',
    done: (jobId: string) => `${prefix}done:${jobId}`,
    reply: (clientId: string) => `${prefix}reply:${clientId}`,
    /** Exists while the client is alive (renewed every leaseMs / 3); its jobs and answers die with it. */
    lease: (clientId: string) => `${prefix}lease:${clientId}`,
  };
}

/** Redis's own clock in ms, so deadlines mean the same on every machine whatever their clocks say. */
const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * Adds a batch of jobs unless the queue is full (all or nothing, atomically), and renews the client's
 * lease. Returns {added, leaseExisted}; added is -1 when full: the caller waits and retries, so work is
 * delayed, never dropped. A batch is admitted into an empty queue even when larger than the limit, so no
 * batch waits forever. Each job carries its reply stream, its client's lease and its deadline (Redis
 * time), so a worker can skip a job whose caller gave up.
 * KEYS[1] jobs, KEYS[2] lease; ARGV[1] max queued, ARGV[2] reply key, ARGV[3] lease ms,
 * ARGV[4..] jobId, ms left until its deadline, payload triples.
 */
export const ENQUEUE = `
local had = redis.call('EXISTS', KEYS[2])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
local n = (#ARGV - 3) / 3
local len = redis.call('XLEN', KEYS[1])
if len > 0 and len + n > tonumber(ARGV[1]) then return {-1, had} end
${NOW}
for i = 0, n - 1 do
  local b = 4 + 3 * i
  local deadline = string.format('%.0f', now + tonumber(ARGV[b + 1]))
  redis.call('XADD', KEYS[1], '*', 'j', ARGV[b], 'r', ARGV[2], 'l', KEYS[2], 'd', deadline, 'p', ARGV[b + 2])
end
return {n, had}`;

/**
 * Renews a client's lease and the expiry of its reply stream (both lapse together when it dies).
 * Returns 1 when the lease still existed, 0 when it had lapsed (workers may have skipped its jobs).
 * KEYS[1] lease, KEYS[2] reply stream; ARGV[1] lease ms.
 */
export const RENEW = `
local had = redis.call('EXISTS', KEYS[1])
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return had`;

/** Why a worker does not run a job it took (SCREEN's answer per job). */
export const Screen = { RUN: 1, EXPIRED: 2, ABANDONED: 3, ANSWERED: 4, CANCELLED: 5 } as const;

/** The done marker's value for a job its caller cancelled (a published one holds '1'). */
export const CANCELLED_MARK = 'cancelled';

/**
 * Decides, just before running, which of the jobs a worker took are still wanted: not answered already
 * (a resubmitted copy) nor cancelled (the client set the done marker), their client's lease alive (not
 * killed or closed), and their deadline not so near that the answer would come too late (now + the
 * job's time limit > deadline). Unwanted jobs are acknowledged and deleted here, never run. Returns one Screen code per job.
 * KEYS[1] jobs, then per job its done marker and lease; ARGV[1] group, then per job entryId, deadline
 * (Redis ms, '' for none), the job's time limit in ms. A job without a lease or a deadline (enqueued by a
 * client older than both) is run.
 */
export const SCREEN = `
${NOW}
local out = {}
for i = 0, (#KEYS - 1) / 2 - 1 do
  local id, deadline, limit = ARGV[2 + 3 * i], ARGV[3 + 3 * i], tonumber(ARGV[4 + 3 * i])
  local why = ${Screen.RUN}
  local mark = redis.call('GET', KEYS[2 + 2 * i])
  if mark == '${CANCELLED_MARK}' then why = ${Screen.CANCELLED}
  elseif mark then why = ${Screen.ANSWERED}
  elseif KEYS[3 + 2 * i] ~= '' and redis.call('EXISTS', KEYS[3 + 2 * i]) == 0 then why = ${Screen.ABANDONED}
  elseif deadline ~= '' and now + limit > tonumber(deadline) then why = ${Screen.EXPIRED} end
  if why ~= ${Screen.RUN} then
    redis.call('XACK', KEYS[1], ARGV[1], id)
    redis.call('XDEL', KEYS[1], id)
  end
  out[#out + 1] = why
end
return out`;

/**
 * Publishes a job's result once (the first finisher wins, a re-run after a reclaim is dropped here) on
 * its client's reply stream, whose expiry follows the client's lease, then acknowledges and deletes the
 * job entry. A client whose lease lapsed gets nothing (nobody would read it) and no done marker is set,
 * so its resubmitted copy still runs (a job without a lease, from an older client, is published with
 * the done marker's ttl). Returns 1 published, 0 duplicate, 2 client gone.
 * KEYS[1] jobs, KEYS[2] done marker, KEYS[3] reply stream, KEYS[4] lease;
 * ARGV group, entryId, jobId, result, ttlSeconds.
 */
export const COMPLETE = `
local outcome = 2
if KEYS[4] == '' or redis.call('EXISTS', KEYS[4]) == 1 then
  outcome = 0
  if redis.call('SET', KEYS[2], '1', 'NX', 'EX', tonumber(ARGV[5])) then
    outcome = 1
    redis.call('XADD', KEYS[3], 'MAXLEN', '~', '1000000', '*', 'j', ARGV[3], 'r', ARGV[4])
    local ttl = KEYS[4] == '' and tonumber(ARGV[5]) * 1000 or redis.call('PTTL', KEYS[4])
    if ttl > 0 then redis.call('PEXPIRE', KEYS[3], ttl) end
  end
end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
return outcome`;

/**
 * Removes consumers (workers) that have been silent for more than ARGV[3] ms and hold no pending job:
 * a dead worker's jobs are retaken first (XAUTOCLAIM), then its name is dropped from the group. Checked
 * and removed in one script, so a consumer that takes a job meanwhile is never removed with it.
 * KEYS[1] jobs; ARGV[1] group, ARGV[2] the calling consumer, ARGV[3] idle ms. Returns how many.
 */
export const REAP = `
local removed = 0
for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local f = {}
  for i = 1, #c, 2 do f[c[i]] = c[i + 1] end
  if f['name'] ~= ARGV[2] and f['pending'] == 0 and f['idle'] > tonumber(ARGV[3]) then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], f['name'])
    removed = removed + 1
  end
end
return removed`;

/** The key prefix of one deployment, the same for its clients and workers (the `prefix` config field). */
export const PrefixSchema = z
  .string()
  .default('agentrl:exec:')
  .describe('key prefix shared by clients and workers of one deployment');

/** The first-connect limit of clients and workers alike (the `connectTimeoutMs` config field). */
export const ConnectTimeoutSchema = z
  .number()
  .int()
  .positive()
  .default(5_000)
  .describe('how long to wait for Redis to first answer before failing; later outages are waited out');

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

/**
 * Waits for a first answer from Redis, at most `timeoutMs`. The connections retry forever (so a Redis
 * restart mid-run is waited out), which would make a first connect to a dead address hang.
 */
export async function firstAnswer(conn: Redis, url: string, timeoutMs: number, fix: string): Promise<void> {
  let lastError: unknown;
  const onError = (err: unknown) => {
    lastError = err;
  };
  conn.on('error', onError);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      conn.ping(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(lastError ?? new Error('no answer')), timeoutMs);
      }),
    ]);
  } catch (cause) {
    const why = cause instanceof Error ? cause.message : String(cause);
    throw new ExecutorError(
      'TRANSPORT',
      `Redis at ${url} did not answer within ${timeoutMs} ms (${why}); ${fix}`,
      { cause },
    );
  } finally {
    clearTimeout(timer);
    conn.off('error', onError);
  }
}

/** Flat [k, v, k, v] stream fields to an object. */
export function fields(list: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < list.length; i += 2) out[list[i] as string] = list[i + 1] as string;
  return out;
}
