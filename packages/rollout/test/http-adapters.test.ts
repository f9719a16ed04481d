import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSglangAdapter } from '../src/adapters/sglang-adapter.js';
import { createVllmAdapter } from '../src/adapters/vllm-adapter.js';
import { runTrajectory } from '../src/agent-loop.js';
import { createChatFormat } from '../src/chat-format.js';
import { AgentLoopConfigSchema } from '../src/config.js';
import type { EngineAdapter } from '../src/engine-adapter.js';
import { type EngineServer, startEngineServer } from '../src/server/engine-server.js';
import { createToolRegistry } from '../src/tools.js';
import { createScriptedEngine } from './helpers/scripted-engine.js';
import { createTestTokenizer } from './helpers/test-tokenizer.js';

const tokenizer = createTestTokenizer();
const toolResponseId = tokenizer.encode('<tool_response>')[0]!;
// Turn k of a trajectory is chosen by how many tool responses its history holds.
const script = (_: string, __: number, ids: readonly number[]) =>
  ids.filter((t) => t === toolResponseId).length === 0
    ? '<tool_call>{"name":"python","arguments":{"code":"1"}}</tool_call>'
    : 'answer ab<|im_end|>';
const direct = createScriptedEngine(tokenizer, script);
const served = createScriptedEngine(tokenizer, script);
let server: EngineServer;

beforeAll(async () => {
  server = await startEngineServer({
    engine: served,
    tokenizer,
    model: 'tiny',
    kvCapacityTokens: 4096,
    kvBlockSize: 16,
  });
});
afterAll(async () => {
  await server.close();
});

const prompt = tokenizer.encode('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');

const context = (requestTimeoutMs = 10_000) => ({
  tokenizer,
  chatFormat: createChatFormat(),
  tools: createToolRegistry([
    {
      name: 'python',
      description: 'x',
      parameters: {},
      handler: async () => ({
        status: 'ok' as const,
        stdout: '1\n',
        stderr: '',
        exitCode: 0,
        signal: null,
        wallMs: 1,
        cpuMs: 1,
      }),
    },
  ]),
  config: AgentLoopConfigSchema.parse({ requestTimeoutMs }),
});
const job = (id: string) => ({ id, promptId: 'p', promptIds: prompt, promptText: '' });

describe.each([
  ['vLLM /v1/completions', () => createVllmAdapter({ baseUrl: server.url, model: 'tiny' })],
  ['SGLang /generate', () => createSglangAdapter({ baseUrl: server.url })],
])('%s adapter against the local server', (_, make) => {
  it('returns what the engine sampled, token for token, and a multi-turn trajectory identical to in-process', async () => {
    const adapter: EngineAdapter = make();
    const viaHttp = await runTrajectory(context(), adapter, job('a'));
    const inProcess = await runTrajectory(context(), direct, job('a'));
    expect(viaHttp.finishReason).toBe('stop');
    expect(viaHttp.toolCalls).toHaveLength(1);
    expect(viaHttp.tokenIds).toEqual(inProcess.tokenIds);
    expect(viaHttp.logprobs).toEqual(inProcess.logprobs);
    expect(viaHttp.lossMask).toEqual(inProcess.lossMask);
    await adapter.close();
  });

  it('reads KV capacity and load from the server', async () => {
    const adapter = make();
    const load = await adapter.load();
    expect(load.kvCapacityTokens).toBe(4096);
    expect(load.running).toBe(0);
    await adapter.close();
  });
});

describe('the official openai client', () => {
  it('lists the model and completes text and token-id prompts', async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused' });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['tiny']);
    const c = await client.completions.create({ model: 'tiny', prompt: 'hello', max_tokens: 8, logprobs: 0 });
    expect(c.choices[0]!.text.length).toBeGreaterThan(0);
    expect(c.choices[0]!.logprobs!.token_logprobs!.length).toBe(c.usage!.completion_tokens);
    const byIds = await client.completions.create({ model: 'tiny', prompt: prompt, max_tokens: 200 });
    expect(byIds.choices[0]!.finish_reason).toBe('stop');
    const stream = await client.completions.create({
      model: 'tiny',
      prompt: 'x',
      max_tokens: 4,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    expect(text.length).toBeGreaterThan(0);
  });

  it('gets a 400 for a request outside the documented schema', async () => {
    const res = await fetch(`${server.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', prompt: [1], max_tokens: 1, bogus_field: 1 }),
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/bogus_field/);
  });
});

/** A server that misbehaves in one way, to check that no failure hangs a trajectory. */
async function faultyServer(mode: 'error500' | 'hang' | 'truncate') {
  const s = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (mode === 'error500') {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end('{"message":"internal"}');
      } else if (mode === 'truncate') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '400' });
        res.write('{"choices":[{"token_ids":[1,2');
        setTimeout(() => res.socket?.destroy(), 20);
      }
      // hang: never answer
    });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        s.closeAllConnections();
        s.close(() => r());
      }),
  };
}

describe('engine failures end the trajectory with an explicit reason', () => {
  it.each([
    ['error500', 'engine_error'],
    ['truncate', 'engine_error'],
    ['hang', 'timeout'],
  ] as const)('%s → %s', async (mode, reason) => {
    const bad = await faultyServer(mode);
    try {
      for (const adapter of [
        createVllmAdapter({ baseUrl: bad.url, model: 'tiny' }),
        createSglangAdapter({ baseUrl: bad.url }),
      ]) {
        const t0 = performance.now();
        const t = await runTrajectory(context(mode === 'hang' ? 300 : 10_000), adapter, job(`f-${mode}`));
        expect(t.finishReason).toBe(reason);
        expect(performance.now() - t0).toBeLessThan(5_000);
        expect(t.tokenIds).toEqual(prompt);
        await adapter.close();
      }
    } finally {
      await bad.close();
    }
  });

  it('connection refused → engine_error', async () => {
    const bad = await faultyServer('hang');
    await bad.close(); // the port is now closed
    const adapter = createVllmAdapter({ baseUrl: bad.url, model: 'tiny' });
    const t = await runTrajectory(context(), adapter, job('refused'));
    expect(t.finishReason).toBe('engine_error');
    await adapter.close();
  });
});
