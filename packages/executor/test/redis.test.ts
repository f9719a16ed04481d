import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisExecutor } from '../src/redis-client.js';
import { startWorker, type Worker } from '../src/redis-worker.js';
import { serve } from '../src/serve.js';
import { testRedis } from './redis-server.js';

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
    expect(err?.code).toBe('TRANSPORT');
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
      expect(r.error?.code).toBe('DEADLINE');
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
      expect(r.error?.code).toBe('WORKER_CRASHED');
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
});
