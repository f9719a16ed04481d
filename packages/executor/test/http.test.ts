import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExecutor } from '../src/create-executor.js';
import { type RunningServer, serve } from '../src/serve.js';
import type { Executor } from '../src/types.js';

let server: RunningServer;
let client: Executor;
beforeAll(async () => {
  server = await serve({ port: 0, pool: { servers: 1, timeoutMs: 1500, concurrency: 4 } });
  client = await createExecutor({ mode: { url: server.url }, batchSize: 8, lingerMs: 2 });
});
afterAll(async () => {
  await client?.close();
  await server?.close();
});

const post = async (path: string, body: unknown) => {
  const res = await request(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
};

describe('HTTP server and client', () => {
  it('runs calls through the batched client API', async () => {
    const rs = await client.runBatch(Array.from({ length: 20 }, (_, i) => ({ code: `print(${i} + 1)` })));
    expect(rs.map((r) => r.stdout)).toEqual(Array.from({ length: 20 }, (_, i) => `${i + 1}\n`));
    expect(rs.every((r) => r.status === 'ok' && r.latencyMs > 0)).toBe(true);
    const t = await client.run({ code: 'import time; time.sleep(5)', timeoutMs: 300 });
    expect(t).toMatchObject({ status: 'timeout', signal: 'SIGKILL' });
  });

  it('speaks code-judge: /run, /run/batch, /run/long-batch, /status', async () => {
    const one = await post('/run', {
      sub_id: 'a1',
      type: 'python',
      solution: 'print(input() * 2)',
      input: 'ab',
    });
    expect(one.body).toMatchObject({
      sub_id: 'a1',
      success: true,
      run_success: true,
      stdout: 'abab\n',
      reason: '',
    });
    expect(typeof one.body.cost).toBe('number');
    for (const path of ['/run/batch', '/run/long-batch']) {
      const batch = await post(path, {
        type: 'batch',
        submissions: [
          { type: 'python', solution: 'print(1)' },
          { type: 'python', solution: '1/0' },
          { type: 'python', solution: 'while True: pass' },
          { type: 'python', solution: 'print(2)', expected_output: '3' },
        ],
      });
      const results = batch.body.results as Record<string, unknown>[];
      expect(results.map((r) => [r.success, r.run_success, r.reason])).toEqual([
        [true, true, ''],
        [false, false, ''],
        [false, false, 'worker_timeout'],
        [false, true, ''],
      ]);
      expect(String(results[1]?.stderr)).toContain('ZeroDivisionError');
    }
    const status = await request(`${server.url}/status`);
    expect(await status.body.json()).toMatchObject({ queue: 0, num_workers: 4 });
  }, 30_000);

  it('speaks SandboxFusion: /run_code', async () => {
    const ok = await post('/run_code', {
      code: 'print(input())',
      language: 'python',
      run_timeout: 5,
      stdin: 'hi',
    });
    expect(ok.body).toMatchObject({
      status: 'Success',
      run_result: { status: 'Finished', return_code: 0, stdout: 'hi\n', stderr: '' },
    });
    const slow = await post('/run_code', {
      code: 'import time; time.sleep(3)',
      language: 'python',
      run_timeout: 0.3,
    });
    expect(slow.body).toMatchObject({
      status: 'Failed',
      run_result: { status: 'TimeLimitExceeded', return_code: null },
    });
    // cpp runs since issue 25: a source that does not compile is Failed, with its compile_result
    const cpp = await post('/run_code', { code: 'x', language: 'cpp' });
    expect(cpp).toMatchObject({ status: 200, body: { status: 'Failed', run_result: null } });
    const go = await post('/run_code', { code: 'x', language: 'go' }); // refused in SandboxFusion's shape
    expect(go).toMatchObject({ status: 200, body: { status: 'SandboxError', run_result: null } });
  });

  it('serves health and Prometheus metrics', async () => {
    const health = await request(`${server.url}/health`);
    expect(await health.body.json()).toMatchObject({ status: 'ok', mode: 'embedded' });
    const metrics = await (await request(`${server.url}/metrics`)).body.text();
    expect(metrics).toMatch(/agentrl_executor_calls_total\{status="ok"\} \d+/);
    expect(metrics).toContain('agentrl_executor_call_seconds_bucket');
  });

  it('rejects malformed requests with 400', async () => {
    expect((await post('/v1/run', { nope: 1 })).status).toBe(400);
  });
});
