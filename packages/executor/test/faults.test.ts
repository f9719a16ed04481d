import { Redis } from 'ioredis';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpExecutor } from '../src/http-client.js';
import { RedisExecutor } from '../src/redis-client.js';
import { startWorker } from '../src/redis-worker.js';
import { serve } from '../src/serve.js';
import type { RunResult } from '../src/types.js';
import { exitOf, spawnBin, waitForLine, workerArgs } from './bin-process.js';
import { sleep } from './processes.js';
import { freePort, OwnedRedis, testRedis } from './redis-server.js';

const pool = { servers: 1, concurrency: 4, timeoutMs: 5000, leanServer: false, preload: [] };

/** Every job answered exactly once, with its own result or an explicit error. */
function expectEachAnsweredOnce(results: RunResult[], expected: (i: number) => string): void {
  results.forEach((r, i) => {
    if (r.status === 'sandbox_error') expect(r.error?.code).toBeTruthy();
    else expect(r).toMatchObject({ status: 'ok', stdout: expected(i) });
  });
}

let redis: Awaited<ReturnType<typeof testRedis>>;
beforeAll(async () => {
  redis = await testRedis();
});
afterAll(() => redis?.stop());

describe('fault tolerance', () => {
  it('kill -9 of a worker mid-batch: its jobs are retaken after the visibility timeout', async () => {
    const prefix = `${redis.prefix}kill:`;
    const victim = spawnBin(workerArgs(redis.url, prefix, 4, '--visibility-ms', '1500'));
    await waitForLine(victim, /taking jobs/);
    const client = await new RedisExecutor({ redis: redis.url, prefix, batchSize: 4, lingerMs: 1 }).connect();
    const probe = new Redis(redis.url);
    try {
      const calls = Array.from({ length: 16 }, (_, i) =>
        client.run({ code: `import time\ntime.sleep(0.4)\nprint(${i})` }),
      );
      // Wait until the victim holds jobs, then kill it without a chance to clean up.
      for (let i = 0; i < 100; i++) {
        const summary = (await probe.xpending(`${prefix}jobs`, 'workers')) as [number, ...unknown[]];
        if (summary[0] > 0) break;
        await sleep(20);
      }
      victim.kill('SIGKILL');
      const rescuer = await startWorker({ redis: redis.url, prefix, visibilityMs: 1500, pool });
      try {
        const results = await Promise.all(calls);
        expect(results.map((r) => r.stdout)).toEqual(Array.from({ length: 16 }, (_, i) => `${i}\n`));
        expect(results.every((r) => r.status === 'ok')).toBe(true);
        expect(rescuer.completed()).toBeGreaterThan(0);
        expect(await probe.xlen(`${prefix}jobs`)).toBe(0);
      } finally {
        await rescuer.stop();
      }
    } finally {
      victim.kill('SIGKILL');
      probe.disconnect();
      await client.close();
    }
  }, 60_000);

  it('Redis restart mid-run: lost jobs are resubmitted, every call answered once', async () => {
    const owned = await OwnedRedis.start(); // this test must own the server it restarts
    const prefix = 'restart:';
    const worker = await startWorker({ redis: owned.url, prefix, visibilityMs: 2000, pool });
    const client = await new RedisExecutor({ redis: owned.url, prefix, batchSize: 4, lingerMs: 1 }).connect();
    try {
      const calls = Array.from({ length: 24 }, (_, i) =>
        client.run({ code: `import time\ntime.sleep(0.2)\nprint(${i})` }),
      );
      await sleep(250);
      await owned.down();
      await sleep(400);
      await owned.up();
      const results = await Promise.all(calls);
      expect(results.map((r) => r.stdout)).toEqual(Array.from({ length: 24 }, (_, i) => `${i}\n`));
      expect(client.resubmitted).toBeGreaterThan(0);
      // The service still serves after the restart.
      expect(await client.run({ code: 'print("after")' })).toMatchObject({ status: 'ok', stdout: 'after\n' });
    } finally {
      await client.close();
      await worker.stop();
      await owned.stop();
    }
  }, 60_000);

  it('HTTP server stopped mid-request: a graceful stop answers what it accepted', async () => {
    const server = await serve({ port: 0, pool });
    const client = new HttpExecutor({ url: server.url, batchSize: 4, lingerMs: 1, retries: 0 });
    const calls = Array.from({ length: 8 }, (_, i) =>
      client.run({ code: `import time\ntime.sleep(0.3)\nprint(${i})` }),
    );
    // Stop once the server holds all eight (by time alone, a loaded machine may not have sent them yet).
    for (let i = 0; i < 500; i++) {
      const health = (await (await request(`${server.url}/health`)).body.json()) as { pending: number };
      if (health.pending === 8) break;
      await sleep(10);
    }
    await server.close();
    const results = await Promise.all(calls);
    expect(results.map((r) => r.stdout)).toEqual(Array.from({ length: 8 }, (_, i) => `${i}\n`));
    await client.close();
  });

  it('HTTP server killed mid-request: calls are retried on its replacement, or fail explicitly', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const first = spawnBin(['serve', '--port', String(port), '--servers', '1', '--preload', '']);
    await waitForLine(first, /serving on/);
    const client = new HttpExecutor({ url, batchSize: 4, lingerMs: 1, retries: 6, retryBackoffMs: 100 });
    const calls = Array.from({ length: 8 }, (_, i) =>
      client.run({ code: `import time\ntime.sleep(0.5)\nprint(${i})` }),
    );
    await sleep(300);
    first.kill('SIGKILL');
    await sleep(200);
    const second = await serve({ port, pool });
    try {
      const results = await Promise.all(calls);
      expect(results.map((r) => r.stdout)).toEqual(Array.from({ length: 8 }, (_, i) => `${i}\n`));
    } finally {
      await second.close();
    }
    // With nobody to retry against, each call ends once, with an explicit TRANSPORT error.
    const lonely = new HttpExecutor({ url, retries: 2, retryBackoffMs: 20 });
    const failed = await lonely.runBatch([{ code: 'print(1)' }, { code: 'print(2)' }]);
    expectEachAnsweredOnce(failed, (i) => `${i + 1}\n`);
    expect(failed.map((r) => r.error?.code)).toEqual(['EXECUTOR_TRANSPORT', 'EXECUTOR_TRANSPORT']);
    await lonely.close();
    await client.close();
  }, 60_000);

  it('HTTP client waits out a front end that is down for 4.5 s: it retries until the call deadline', async () => {
    const port = await freePort();
    const client = new HttpExecutor({ url: `http://127.0.0.1:${port}`, lingerMs: 1, answerSlackMs: 15_000 });
    const t0 = Date.now();
    const calls = [0, 1, 2].map((i) => client.run({ code: `print(${i})`, timeoutMs: 3000 }));
    await sleep(4500);
    const server = await serve({ port, pool });
    try {
      const results = await Promise.all(calls);
      expect(results.map((r) => [r.status, r.stdout])).toEqual([0, 1, 2].map((i) => ['ok', `${i}\n`]));
      expect(Date.now() - t0).toBeGreaterThanOrEqual(4500);
    } finally {
      await client.close();
      await server.close();
    }
  }, 30_000);

  it('serve --max-pending refuses overload with 504 + Retry-After (what verl retries); clients wait it out', async () => {
    const bad = exitOf(spawnBin(['serve', '--port', '0', '--max-pending', 'lots']));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const front = spawnBin([
      'serve',
      '--port',
      String(port),
      '--max-pending',
      '1',
      '--servers',
      '1',
      '--preload',
      '',
    ]);
    const client = new HttpExecutor({ url, lingerMs: 1 });
    try {
      await waitForLine(front, /serving on/);
      const post = (path: string, body: unknown) =>
        request(`${url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const slow = post('/v1/run', { code: 'import time\ntime.sleep(4)\nprint("slow")' });
      for (let i = 0; i < 200; i++) {
        const health = (await (await request(`${url}/health`)).body.json()) as { pending: number };
        if (health.pending === 1) break;
        await sleep(20);
      }
      const refused = await post('/run_code', { code: 'print(1)', language: 'python' });
      expect(refused.statusCode).toBe(504);
      expect(refused.headers['retry-after']).toBe('1');
      expect(await refused.body.json()).toMatchObject({ status: 'SandboxError' });
      // The client is refused for ~4 s (longer than the old 3 s retry budget), then served.
      const after = await client.run({ code: 'print("after")' });
      expect(after).toMatchObject({ status: 'ok', stdout: 'after\n' });
      expect(await (await slow).body.json()).toMatchObject({ status: 'ok', stdout: 'slow\n' });
      expect((await bad).code).toBe(1);
      expect((await bad).stderr).toContain('--max-pending must be a positive integer; got "lots"');
    } finally {
      front.kill('SIGKILL');
      await client.close();
    }
  }, 90_000);

  it('agentrl-executor worker on a refused Redis port exits within the connect timeout, saying why', async () => {
    const port = await freePort();
    const t0 = Date.now();
    const { code, stderr } = await exitOf(spawnBin(['worker', '--redis', `redis://127.0.0.1:${port}`]));
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /Redis at redis:\/\/127\.0\.0\.1:\d+ did not answer within 5000 ms \(.*ECONNREFUSED.*\); start redis-server/,
    );
    expect(Date.now() - t0).toBeLessThan(30_000); // process start-up included (seconds on a loaded box)
  }, 45_000);
});
