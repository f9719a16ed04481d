import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgentLoopConfigSchema, createChatFormat, createToolRegistry, runTrajectory } from '@agentrl/rollout';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestTokenizer } from '../../rollout/test/helpers/test-tokenizer.js';
import { createJsonClient } from '../src/http/json-client.js';
import { withRetry } from '../src/http/retry.js';
import { createSglangAdapter } from '../src/sglang-adapter.js';
import { createVllmAdapter } from '../src/vllm-adapter.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

/** A free port nobody listens on (bound, read, released). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function listen(port: number, handler: RequestListener) {
  const s = createServer(handler);
  servers.push(s);
  await new Promise<void>((r) => s.listen(port, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

describe('remote engines at start', () => {
  it('an unreachable URL fails connect() with one error that names it', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    for (const adapter of [createVllmAdapter({ baseUrl: url }), createSglangAdapter({ baseUrl: url })]) {
      await expect(adapter.connect()).rejects.toThrow(
        new RegExp(`engine at ${url.replace(/\./g, '\\.')} is not reachable .*fix the engine URL`),
      );
      await adapter.close();
    }
  });

  it('reads the served model name from /v1/models and refuses one the server does not serve', async () => {
    const url = await listen(0, (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        req.url === '/v1/models'
          ? JSON.stringify({ object: 'list', data: [{ id: 'Qwen/Qwen3-0.6B' }] })
          : '{}',
      );
    });
    const found = createVllmAdapter({ baseUrl: url });
    expect(await found.connect()).toEqual({ model: 'Qwen/Qwen3-0.6B', tokenizerCheck: 'skipped' });
    await found.close();
    const wrong = createSglangAdapter({ baseUrl: url, model: 'default' });
    await expect(wrong.connect()).rejects.toThrow(
      /does not serve model "default"; it serves "Qwen\/Qwen3-0\.6B"/,
    );
    await wrong.close();
  });
});

describe('a dead engine mid-run', () => {
  it('retries a refused connection with capped backoff, then ends the trajectory with the reason', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const tokenizer = createTestTokenizer();
    const adapter = createVllmAdapter({ baseUrl: url, model: 'm', retry: { attempts: 3, baseDelayMs: 20 } });
    const started = Date.now();
    const t = await runTrajectory(
      {
        tokenizer,
        chatFormat: createChatFormat(),
        tools: createToolRegistry([]),
        config: AgentLoopConfigSchema.parse({ sampling: { maxNewTokens: 8 } }),
      },
      adapter,
      { id: 't', promptId: 'p', promptIds: tokenizer.encode('hi'), promptText: 'hi', policyVersion: 4 },
    );
    expect(t.finishReason).toBe('engine_error');
    expect(t.engineError).toMatch(/could not reach .*ECONNREFUSED.*gave up on .* after 3 attempts/);
    expect(t.policyVersion).toBe(4);
    expect(Date.now() - started).toBeGreaterThanOrEqual(20 + 40);
    await adapter.close();
  });

  it('succeeds once the server is back', async () => {
    const port = await freePort();
    const client = createJsonClient({ baseUrl: `http://127.0.0.1:${port}` });
    setTimeout(() => {
      void listen(port, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
      });
    }, 150);
    const out = await withRetry('get', () => client.get<{ ok: boolean }>('/x'), {
      attempts: 8,
      baseDelayMs: 50,
      maxDelayMs: 100,
    });
    expect(out.ok).toBe(true);
    await client.close();
  });
});
