import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGenerator, createModel, loadModel, type Model, saveModel } from '@agentrl/engine';
import { createNativeAdapter, createSglangAdapter, createVllmAdapter } from '@agentrl/engine-adapters';
import {
  AgentLoopConfigSchema,
  createPythonTool,
  createToolRegistry,
  type EngineAdapter,
  runTrajectory,
} from '@agentrl/rollout';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useExecutor } from '../../rollout/test/helpers/executor.js';
import { chatFormat, QUESTION, tokenizer, trainToolModel } from '../../rollout/test/helpers/tool-model.js';
import { type EngineServer, startEngineServer } from '../src/server.js';

const executor = useExecutor();

let model: Model;
let server: EngineServer & { url: string };
let dir: string;
const decode = (ids: readonly number[]) => tokenizer.decode(ids);
const native = (m: Model) =>
  createNativeAdapter({
    generator: createGenerator(m, { decode }),
    createGenerator: (x) => createGenerator(x as Model, { decode }),
  });

beforeAll(async () => {
  model = trainToolModel();
  dir = await mkdtemp(join(tmpdir(), 'agentrl-rollout-'));
  await saveModel(model, join(dir, 'served'));
  server = await startEngineServer({
    model: await loadModel(join(dir, 'served')),
    tokenizer,
    modelPath: join(dir, 'served'),
    servedModelName: 'tiny',
    kvCapacityTokens: 4096,
    kvBlockSize: 16,
  });
}, 120_000);
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

const prompt = tokenizer.encode(chatFormat.renderPrompt(QUESTION));

const context = (requestTimeoutMs = 10_000, temperature = 1) => ({
  tokenizer,
  chatFormat,
  tools: createToolRegistry([createPythonTool(executor(), { name: 'python' })]),
  config: AgentLoopConfigSchema.parse({
    requestTimeoutMs,
    maxResponseTokens: 400,
    sampling: { temperature, maxNewTokens: 120 },
  }),
});
const job = (id: string, seed?: number) => ({
  id,
  promptId: 'p',
  promptIds: prompt,
  promptText: '',
  ...(seed !== undefined ? { seed } : {}),
});

describe.each([
  [
    'vLLM /v1/completions',
    () => createVllmAdapter({ baseUrl: server.url, model: 'tiny', modelDir: join(dir, 'served') }),
  ],
  ['SGLang /generate', () => createSglangAdapter({ baseUrl: server.url })],
])('%s adapter against the local server on the native engine', (_, make) => {
  it('gives the trajectory the in-process engine gives, token for token and logprob for logprob', async () => {
    const adapter: EngineAdapter = make();
    for (const seed of [1, 2, 3]) {
      const viaHttp = await runTrajectory(context(), adapter, job(`a${seed}`, seed));
      const inProcess = await runTrajectory(context(), native(model), job(`a${seed}`, seed));
      expect(viaHttp.tokenIds).toEqual(inProcess.tokenIds);
      expect(viaHttp.logprobs).toEqual(inProcess.logprobs);
      expect(viaHttp.lossMask).toEqual(inProcess.lossMask);
      expect(viaHttp.finishReason).toBe(inProcess.finishReason);
    }
    const greedy = await runTrajectory(context(10_000, 0), adapter, job('g'));
    expect(greedy.toolCalls[0]!.outcome.stdout).toBe('42\n');
    expect(greedy.finishReason).toBe('stop');
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

describe('weight sync through the server', () => {
  it('SGLang update_weights_from_disk and vLLM collective_rpc reload_weights swap the served model', async () => {
    const other = createModel(model.config, { seed: 99 });
    const sglang = createSglangAdapter({ baseUrl: server.url });
    const vllm = createVllmAdapter({ baseUrl: server.url, model: 'tiny', modelDir: join(dir, 'served') });
    const greedy = (m: EngineAdapter) => runTrajectory(context(10_000, 0), m, job('w'));
    const before = await greedy(sglang);
    await saveModel(other, join(dir, 'other'));
    await sglang.updateWeights({ kind: 'disk', path: join(dir, 'other') });
    const after = await greedy(sglang);
    expect(after.tokenIds).toEqual((await greedy(native(other))).tokenIds);
    expect(after.tokenIds).not.toEqual(before.tokenIds);
    // The policy version travels with every trajectory.
    expect(before.policyVersion).toBe(0);
    expect(sglang.policyVersion).toBe(1);
    expect(after.policyVersion).toBe(1);
    // vLLM re-reads its launch directory; a different path is refused with an actionable error.
    await saveModel(model, join(dir, 'served'));
    await expect(vllm.updateWeights({ kind: 'disk', path: join(dir, 'other') })).rejects.toThrow(
      /launch directory/,
    );
    await vllm.updateWeights({ kind: 'disk', path: join(dir, 'served') });
    expect((await greedy(vllm)).tokenIds).toEqual(before.tokenIds);
    await sglang.close();
    await vllm.close();
  });
});

describe('the official openai client', () => {
  it('lists the model and completes text and token-id prompts', async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused' });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['tiny']);
    const c = await client.completions.create({ model: 'tiny', prompt: 'hello', max_tokens: 8, logprobs: 0 });
    expect(c.choices[0]!.logprobs!.token_logprobs!.length).toBe(c.usage!.completion_tokens);
    const byIds = await client.completions.create({
      model: 'tiny',
      prompt,
      max_tokens: 200,
      temperature: 0,
      stop: ['</tool_call>'],
    });
    // vLLM leaves the stop string out of the text and names it in stop_reason.
    expect(byIds.choices[0]!.text).toBe('<tool_call>{"name":"python","arguments":{"code":"print(6*7)"}}');
    expect(byIds.choices[0]!.finish_reason).toBe('stop');
    expect((byIds.choices[0] as unknown as { stop_reason: unknown }).stop_reason).toBe('</tool_call>');
    const stream = await client.completions.create({
      model: 'tiny',
      prompt: 'x',
      max_tokens: 4,
      stream: true,
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(...chunk.choices);
    // token by token, the last chunk naming the finish reason
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.slice(0, -1).every((c) => c.finish_reason === null)).toBe(true);
    expect(chunks.at(-1)!.finish_reason).not.toBeNull();
  });

  it('ignores unknown fields as vLLM does, and gets a 400 for a wrongly typed known one', async () => {
    const post = (body: unknown) =>
      fetch(`${server.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const ok = await post({ model: 'tiny', prompt: [1], max_tokens: 1, bogus_field: 1 });
    expect(ok.status).toBe(200);
    const bad = await post({ model: 'tiny', prompt: [1], max_tokens: 'one' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/max_tokens/);
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
    const adapter = createVllmAdapter({
      baseUrl: bad.url,
      model: 'tiny',
      retry: { attempts: 2, baseDelayMs: 10 },
    });
    const t = await runTrajectory(context(), adapter, job('refused'));
    expect(t.finishReason).toBe('engine_error');
    await adapter.close();
  });
});
