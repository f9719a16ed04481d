import { Redis } from 'ioredis';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HttpExecutor } from '../src/http-client.js';
import { RedisExecutor } from '../src/redis-client.js';
import { startWorker, type Worker } from '../src/redis-worker.js';
import { serve } from '../src/serve.js';
import { spawnTs, waitForLine } from './bin-process.js';
import { testRedis } from './redis-server.js';

/** Keys under `prefix` that hold answers or client state (done markers aside). */
async function leftovers(probe: Redis, prefix: string): Promise<string[]> {
  const keys = await probe.keys(`${prefix}*`);
  return keys.filter((k) => !k.startsWith(`${prefix}done:`) && k !== `${prefix}jobs`).sort();
}

let redis: Awaited<ReturnType<typeof testRedis>>;
beforeAll(async () => {
  redis = await testRedis();
});
afterAll(() => redis?.stop());

const pool = { servers: 1, concurrency: 4, timeoutMs: 3000 };

describe('distributed mode (Redis streams + consumer group)', () => {
  it('fails fast, with the fix in the message, when Redis refuses the first connection', async () => {
    const net = await import('node:net');
    const port = await new Promise<number>((resolve) => {
      const srv = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const started = Date.now();
    const err = await new RedisExecutor({ redis: `redis://127.0.0.1:${port}`, connectTimeoutMs: 500 })
      .connect()
      .then(
        () => null,
        (e: unknown) => e as Error & { code?: string },
      );
    expect(err?.code).toBe('EXECUTOR_TRANSPORT');
    expect(err?.message).toMatch(/did not answer within 500 ms \(.*ECONNREFUSED.*\); start redis-server/);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('runs batches through a worker and answers every call once', async () => {
    const prefix = `${redis.prefix}basic:`;
    const worker = await startWorker({ redis: redis.url, prefix, pool });
    const client = await new RedisExecutor({
      redis: redis.url,
      prefix,
      batchSize: 16,
      lingerMs: 2,
    }).connect();
    try {
      const rs = await client.runBatch(Array.from({ length: 40 }, (_, i) => ({ code: `print(${i} ** 2)` })));
      expect(rs.map((r) => r.stdout)).toEqual(Array.from({ length: 40 }, (_, i) => `${i ** 2}\n`));
      const err = await client.run({ code: 'raise KeyError("k")' });
      expect(err.status).toBe('runtime_error');
      expect(err.stderr).toContain("KeyError: 'k'");
      await vi.waitFor(() => expect(worker.completed()).toBe(41));
      expect(client.duplicates).toBe(0);
      expect(client.stats().latencyMs.p50).toBeGreaterThan(0);
    } finally {
      await client.close();
      await worker.stop();
    }
  });

  it('applies back-pressure on a full queue instead of dropping work', async () => {
    const prefix = `${redis.prefix}full:`;
    const client = await new RedisExecutor({
      redis: redis.url,
      prefix,
      batchSize: 2,
      lingerMs: 0,
      maxQueued: 4,
    }).connect();
    let worker: Worker | undefined;
    try {
      const calls = Array.from({ length: 20 }, (_, i) => client.run({ code: `print(${i})` }));
      await new Promise((r) => setTimeout(r, 300));
      // No worker yet: Redis holds at most maxQueued jobs, the rest wait in the client.
      const { Redis } = await import('ioredis');
      const probe = new Redis(redis.url);
      expect(await probe.xlen(`${prefix}jobs`)).toBeLessThanOrEqual(4);
      probe.disconnect();
      worker = await startWorker({ redis: redis.url, prefix, pool });
      const rs = await Promise.all(calls);
      expect(rs.map((r) => r.stdout)).toEqual(Array.from({ length: 20 }, (_, i) => `${i}\n`));
    } finally {
      await client.close();
      await worker?.stop();
    }
  });

  it('answers with an explicit DEADLINE error when no worker ever takes the job', async () => {
    const prefix = `${redis.prefix}noworker:`;
    const client = await new RedisExecutor({ redis: redis.url, prefix, answerSlackMs: 300 }).connect();
    try {
      const r = await client.run({ code: 'print(1)', timeoutMs: 200 });
      expect(r.status).toBe('sandbox_error');
      expect(r.error?.code).toBe('EXECUTOR_DEADLINE');
      expect(r.error?.message).toMatch(/no worker answered/);
    } finally {
      await client.close();
    }
  });

  it('answers a job that keeps killing its workers with sandbox_error instead of retrying forever', async () => {
    const prefix = `${redis.prefix}poison:`;
    const client = await new RedisExecutor({ redis: redis.url, prefix, lingerMs: 0 }).connect();
    const { Redis } = await import('ioredis');
    const ghost = new Redis(redis.url);
    let worker: Worker | undefined;
    try {
      const call = client.run({ code: 'print("never runs")' });
      await vi.waitFor(async () => expect(await ghost.xlen(`${prefix}jobs`)).toBe(1));
      // Five workers took it and died: one delivery by read, then reclaims.
      await ghost.xgroup('CREATE', `${prefix}jobs`, 'workers', '0', 'MKSTREAM');
      const read = (await ghost.xreadgroup(
        'GROUP',
        'workers',
        'ghost-0',
        'COUNT',
        1,
        'STREAMS',
        `${prefix}jobs`,
        '>',
      )) as [string, [string, string[]][]][];
      const entryId = read[0]?.[1][0]?.[0] as string;
      for (let i = 1; i <= 4; i++) await ghost.xclaim(`${prefix}jobs`, 'workers', `ghost-${i}`, 0, entryId);
      worker = await startWorker({ redis: redis.url, prefix, visibilityMs: 100, maxDeliveries: 5, pool });
      const r = await call;
      expect(r.status).toBe('sandbox_error');
      expect(r.error?.code).toBe('EXECUTOR_WORKER_CRASHED');
      expect(r.error?.message).toMatch(/taken 5 times by workers that died/);
      expect(await client.run({ code: 'print("healthy")' })).toMatchObject({
        status: 'ok',
        stdout: 'healthy\n',
      });
    } finally {
      ghost.disconnect();
      await client.close();
      await worker?.stop();
    }
  });

  it('an HTTP server started with --redis hands calls to the workers', async () => {
    const prefix = `${redis.prefix}front:`;
    const worker = await startWorker({ redis: redis.url, prefix, pool });
    const server = await serve({ port: 0, redis: redis.url, prefix });
    try {
      const res = await request(`${server.url}/run/long-batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'batch', submissions: [{ type: 'python', solution: 'print(3 * 3)' }] }),
      });
      const body = (await res.body.json()) as { results: { stdout: string; success: boolean }[] };
      expect(body.results[0]).toMatchObject({ stdout: '9\n', success: true });
      expect(await (await request(`${server.url}/health`)).body.json()).toMatchObject({ mode: 'redis' });
      expect(await (await request(`${server.url}/status`)).body.json()).toMatchObject({
        queue: 0,
        num_workers: 1,
      });
    } finally {
      await server.close();
      await worker.stop();
    }
  });

  it('a job whose caller had its DEADLINE is never run later, and leaves no answer behind', async () => {
    const prefix = `${redis.prefix}expired:`;
    const client = await new RedisExecutor({ redis: redis.url, prefix, answerSlackMs: 300 }).connect();
    const probe = new Redis(redis.url);
    let worker: Worker | undefined;
    try {
      const r = await client.run({ code: 'print("too late")', timeoutMs: 200 });
      expect(r.error?.code).toBe('EXECUTOR_DEADLINE');
      worker = await startWorker({ redis: redis.url, prefix, pool });
      await vi.waitFor(() => expect(worker?.skipped().expired).toBe(1), { timeout: 5000 });
      expect(worker.completed()).toBe(0);
      expect(await probe.xlen(`${prefix}jobs`)).toBe(0);
      // Only the live client's lease: no reply stream was ever written.
      const left = await leftovers(probe, prefix);
      expect(left.map((k) => k.replace(/[^:]+$/, ''))).toEqual([`${prefix}lease:`]);
      await client.close();
      expect(await leftovers(probe, prefix)).toEqual([]);
    } finally {
      probe.disconnect();
      await client.close();
      await worker?.stop();
    }
  });

  it("a killed client's jobs are skipped, not run, and its lease and reply stream expire", async () => {
    const prefix = `${redis.prefix}killed:`;
    const probe = new Redis(redis.url);
    const proc = spawnTs('test/fixtures/submit-and-wait.ts', [redis.url, prefix, '3', '600']);
    let worker: Worker | undefined;
    try {
      await waitForLine(proc, /submitted/);
      expect(await probe.xlen(`${prefix}jobs`)).toBe(3);
      proc.kill('SIGKILL');
      await vi.waitFor(async () => expect(await leftovers(probe, prefix)).toEqual([]), { timeout: 3000 });
      worker = await startWorker({ redis: redis.url, prefix, pool });
      await vi.waitFor(() => expect(worker?.skipped().abandoned).toBe(3), { timeout: 5000 });
      expect(worker.completed()).toBe(0);
      expect(await probe.xlen(`${prefix}jobs`)).toBe(0);
      expect(await leftovers(probe, prefix)).toEqual([]);
    } finally {
      proc.kill('SIGKILL');
      probe.disconnect();
      await worker?.stop();
    }
  });

  it('through the HTTP front end, "no worker answers" ends in DEADLINE with one job per call', async () => {
    const prefix = `${redis.prefix}front-deadline:`;
    const server = await serve({ port: 0, redis: redis.url, prefix });
    const client = new HttpExecutor({ url: server.url, lingerMs: 1, answerSlackMs: 1500 });
    const probe = new Redis(redis.url);
    let worker: Worker | undefined;
    try {
      const t0 = Date.now();
      const rs = await client.runBatch([
        { code: 'print(1)', timeoutMs: 200 },
        { code: 'print(2)', timeoutMs: 200 },
      ]);
      expect(rs.map((r) => r.error?.code)).toEqual(['EXECUTOR_DEADLINE', 'EXECUTOR_DEADLINE']);
      expect(rs[0]?.error?.message).toMatch(/no worker answered/); // the front end's answer, in time
      expect(Date.now() - t0).toBeLessThan(1700 + 2000);
      expect(await probe.xlen(`${prefix}jobs`)).toBe(2); // not one resent copy per client timeout
      // A worker that comes later does not run what nobody waits for.
      worker = await startWorker({ redis: redis.url, prefix, pool });
      await vi.waitFor(() => expect(worker?.skipped().expired).toBe(2), { timeout: 5000 });
      expect(worker.completed()).toBe(0);
      await server.close();
      expect(await leftovers(probe, prefix)).toEqual([]);
    } finally {
      probe.disconnect();
      await client.close();
      await server.close();
      await worker?.stop();
    }
  });

  it('removes the consumers of dead workers from the group once their jobs are retaken', async () => {
    const prefix = `${redis.prefix}reap:`;
    const jobs = `${prefix}jobs`;
    const client = await new RedisExecutor({
      redis: redis.url,
      prefix,
      lingerMs: 0,
      answerSlackMs: 10_000,
    }).connect();
    const ghost = new Redis(redis.url);
    let worker: Worker | undefined;
    try {
      const call = client.run({ code: 'print("rescued")' });
      await vi.waitFor(async () => expect(await ghost.xlen(jobs)).toBe(1));
      // Two workers that died: one holding the job, one idle.
      await ghost.xgroup('CREATE', jobs, 'workers', '0', 'MKSTREAM');
      await ghost.xreadgroup('GROUP', 'workers', 'dead-holder', 'COUNT', 1, 'STREAMS', jobs, '>');
      await ghost.xgroup('CREATECONSUMER', jobs, 'workers', 'dead-idle');
      const names = async () =>
        ((await ghost.xinfo('CONSUMERS', jobs, 'workers')) as string[][]).map((c) => c[1]).sort();
      expect(await names()).toEqual(['dead-holder', 'dead-idle']);
      worker = await startWorker({ redis: redis.url, prefix, visibilityMs: 300, reapAfterMs: 600, pool });
      expect(await call).toMatchObject({ status: 'ok', stdout: 'rescued\n' });
      const live = worker.consumer;
      await vi.waitFor(async () => expect(await names()).toEqual([live]), { timeout: 5000 });
      expect(worker.reaped()).toBe(2);
    } finally {
      ghost.disconnect();
      await client.close();
      await worker?.stop();
    }
  });

  it('an HTTP caller that hangs up cancels its queued jobs: no worker runs them', async () => {
    const prefix = `${redis.prefix}hangup:`;
    const server = await serve({ port: 0, redis: redis.url, prefix });
    const probe = new Redis(redis.url);
    let worker: Worker | undefined;
    try {
      const ctl = new AbortController();
      const call = request(`${server.url}/run_code`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ code: 'print("nobody reads this")', language: 'python' }),
        signal: ctl.signal,
      }).catch((e: Error) => e);
      await vi.waitFor(async () => expect(await probe.xlen(`${prefix}jobs`)).toBe(1));
      ctl.abort(); // as verl does when its request timeout passes
      expect(await call).toBeInstanceOf(Error);
      await vi.waitFor(async () =>
        expect(await (await request(`${server.url}/health`)).body.json()).toMatchObject({ pending: 0 }),
      );
      worker = await startWorker({ redis: redis.url, prefix, pool });
      await vi.waitFor(() => expect(worker?.skipped().cancelled).toBe(1), { timeout: 5000 });
      expect(worker.completed()).toBe(0);
      expect(await probe.xlen(`${prefix}jobs`)).toBe(0);
    } finally {
      probe.disconnect();
      await server.close();
      await worker?.stop();
    }
  });
});
