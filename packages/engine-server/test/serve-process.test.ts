import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCharTokenizer, createModel, type Model, packSequences, saveModel } from '@agentrl/engine';
import {
  connectEngines,
  createSglangAdapter,
  createVllmAdapter,
  syncEngineWeights,
} from '@agentrl/engine-adapters';
import { wrapToolResponse } from '@agentrl/rollout';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANSWER,
  chatFormat,
  QUESTION,
  TOOL_CALL,
  tokenizer,
  trainToolModel,
} from '../../rollout/test/helpers/tool-model.js';
import { spawnServer } from './helpers/serve-process.js';

let dir: string;
let model: Model;
let server: Awaited<ReturnType<typeof spawnServer>>;
const prompt = tokenizer.encode(chatFormat.renderPrompt(QUESTION));
/** the prompt after the tool answered: the trained model now writes ANSWER and stops at EOS */
const afterTool = [
  ...prompt,
  ...tokenizer.encode(TOOL_CALL),
  ...tokenizer.encode(chatFormat.toolResponseSegment(TOOL_CALL, wrapToolResponse('42'))),
];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentrl-serve-'));
  model = trainToolModel();
  await saveModel(model, join(dir, 'ckpt'));
  server = await spawnServer(['--checkpoint', join(dir, 'ckpt'), '--served-model-name', 'tiny']);
}, 180_000);
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

const post = async (path: string, body: unknown) => {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: replies are read field by field in the assertions
  return { status: res.status, body: (await res.json()) as any };
};

/** log p(seq[i+1] | seq[..i]) of a model in this process. */
function inProcessLogprobs(m: Model, seq: readonly number[]): number[] {
  const logits = m.forwardLogits(packSequences([seq]));
  const V = m.config.vocab_size;
  return seq.slice(1).map((next, i) => {
    const row = logits.subarray(i * V, (i + 1) * V);
    const max = Math.max(...row);
    const logZ = max + Math.log(row.reduce((a, x) => a + Math.exp(x - max), 0));
    return row[next]! - logZ;
  });
}
async function servedLogprobs(seq: readonly number[]): Promise<number[]> {
  const r = await post('/v1/completions', { model: 'tiny', prompt: seq, max_tokens: 0, prompt_logprobs: 0 });
  expect(r.status).toBe(200);
  const entries = r.body.choices[0].prompt_logprobs as Array<Record<string, { logprob: number }> | null>;
  expect(entries[0]).toBeNull();
  return entries.slice(1).map((e, i) => e![String(seq[i + 1])]!.logprob);
}

describe('agentrl serve as a second process, with the official openai client', () => {
  it('lists the served model name and answers a chat with tools through the Hermes parser', async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused' });
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['tiny']);
    const chat = await client.chat.completions.create({
      model: 'tiny',
      messages: QUESTION,
      temperature: 0,
      max_tokens: 80,
      tools: [{ type: 'function', function: { name: 'python', parameters: { type: 'object' } } }],
      stop: ['</tool_call>'],
      // vLLM's extra sampling field: keep the stop string so the call is closed.
      ...({ include_stop_str_in_output: true } as object),
    });
    const choice = chat.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const call = choice.message.tool_calls![0]! as { function: { name: string; arguments: string } };
    expect(call.function.name).toBe('python');
    expect(JSON.parse(call.function.arguments)).toEqual({ code: 'print(6*7)' });
  });

  it('logprobs=k gives the top k per token, the sampled one included', async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused' });
    const c = await client.completions.create({
      model: 'tiny',
      prompt,
      max_tokens: 5,
      temperature: 0,
      logprobs: 3,
    });
    const lp = c.choices[0]!.logprobs!;
    expect(lp.tokens).toHaveLength(5);
    for (let i = 0; i < 5; i++) {
      const top = lp.top_logprobs![i]!;
      expect(Object.keys(top).length).toBeGreaterThanOrEqual(3);
      // Greedy: the sampled token is the most likely one, with the same logprob.
      expect(lp.token_logprobs![i]!).toBeCloseTo(Math.max(...Object.values(top)), 4);
      expect(top[lp.tokens![i]!]).toBeCloseTo(lp.token_logprobs![i]!, 4);
    }
  });
});

describe('raw vLLM-shaped requests', () => {
  it('stops at EOS unless ignore_eos, and skip_special_tokens decides whether the text shows it', async () => {
    const base = { model: 'tiny', prompt: afterTool, max_tokens: 60, temperature: 0 };
    const eos = await post('/v1/completions', { ...base, return_token_ids: true });
    expect(eos.body.choices[0]).toMatchObject({
      text: 'The answer is 42.',
      finish_reason: 'stop',
      stop_reason: null,
    });
    expect(eos.body.choices[0].token_ids).toEqual(tokenizer.encode(ANSWER));
    const raw = await post('/v1/completions', { ...base, skip_special_tokens: false });
    expect(raw.body.choices[0].text).toBe(ANSWER);
    const on = await post('/v1/completions', {
      ...base,
      max_tokens: 30,
      ignore_eos: true,
      return_token_ids: true,
    });
    expect(on.body.choices[0].finish_reason).toBe('length');
    expect(on.body.choices[0].token_ids).toHaveLength(30);
  });

  it("vLLM's stop strings: cut before the string unless include_stop_str_in_output; stop_reason names it", async () => {
    const base = { model: 'tiny', prompt, max_tokens: 60, temperature: 0, stop: ['python'] };
    const cut = await post('/v1/completions', base);
    expect(cut.body.choices[0]).toMatchObject({
      text: '<tool_call>{"name":"',
      finish_reason: 'stop',
      stop_reason: 'python',
    });
    const kept = await post('/v1/completions', { ...base, include_stop_str_in_output: true });
    expect(kept.body.choices[0].text).toBe('<tool_call>{"name":"python');
    const byId = await post('/v1/completions', {
      ...base,
      stop: [],
      stop_token_ids: [tokenizer.tokenId('</tool_call>')],
    });
    expect(byId.body.choices[0].stop_reason).toBe(tokenizer.tokenId('</tool_call>'));
  });

  it('ignores unknown fields, accepts neutral values of unimplemented ones, refuses others by name', async () => {
    const base = { model: 'tiny', prompt: [1, 2], max_tokens: 2 };
    expect((await post('/v1/completions', { ...base, some_future_field: { a: 1 } })).status).toBe(200);
    const neutral = {
      repetition_penalty: 1.0,
      presence_penalty: 0,
      frequency_penalty: 0,
      min_tokens: 0,
      logit_bias: {},
      min_p: 0,
    };
    expect((await post('/v1/completions', { ...base, ...neutral })).status).toBe(200);
    const refused = await post('/v1/completions', { ...base, repetition_penalty: 1.1 });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/repetition_penalty=1\.1 is not implemented .*send 1\.0/);
    const min = await post('/v1/completions', { ...base, min_tokens: 3 });
    expect(min.body.error.message).toMatch(/min_tokens=3/);
    const unknown = await post('/v1/completions', { ...base, model: 'Qwen/Qwen3-0.6B' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.message).toMatch(/`Qwen\/Qwen3-0\.6B` does not exist/);
  });
});

describe('raw SGLang-shaped requests', () => {
  it('batched /generate over token lists and over texts; matched is the string, and the text is trimmed', async () => {
    const sp = { temperature: 0, max_new_tokens: 60, stop: ['python'] };
    const batch = await post('/generate', {
      input_ids: [prompt, afterTool],
      sampling_params: sp,
      return_logprob: true,
    });
    expect(batch.body).toHaveLength(2);
    expect(batch.body[0].text).toBe('<tool_call>{"name":"');
    expect(batch.body[0].meta_info.finish_reason).toEqual({ type: 'stop', matched: 'python' });
    expect(batch.body[0].meta_info.output_token_logprobs).toHaveLength(batch.body[0].output_ids.length);
    // EOS: matched is the token id, left out of the text.
    expect(batch.body[1].text).toBe('The answer is 42.');
    expect(batch.body[1].meta_info.finish_reason).toEqual({ type: 'stop', matched: tokenizer.eosTokenId });
    const texts = await post('/generate', {
      text: ['ab', 'cd'],
      sampling_params: { max_new_tokens: 3, ignore_eos: true },
    });
    expect(
      texts.body.map((r: { meta_info: { finish_reason: unknown } }) => r.meta_info.finish_reason),
    ).toEqual([
      { type: 'length', length: 3 },
      { type: 'length', length: 3 },
    ]);
  });

  it("input_ids with return_logprob and logprob_start_len: SGLang's input and output logprob entries", async () => {
    const seq = afterTool;
    const mine = inProcessLogprobs(model, seq);
    const close = (entries: Array<[number | null, number, string | null]>, from: number) => {
      expect(entries.map((e) => e[1])).toEqual(seq.slice(from));
      expect(entries[0]![0]).toBeNull(); // SGLang pads the first input entry with null, whatever the start
      for (const [j, e] of entries.slice(1).entries())
        expect(Math.abs(e[0]! - mine[from + j]!)).toBeLessThan(1e-5);
    };
    const sp = { temperature: 0, max_new_tokens: 4, ignore_eos: true };
    const all = await post('/generate', {
      input_ids: seq,
      sampling_params: sp,
      return_logprob: true,
      logprob_start_len: 0,
    });
    expect(all.status).toBe(200);
    close(all.body.meta_info.input_token_logprobs, 0);
    expect(all.body.meta_info.output_token_logprobs.map((e: unknown[]) => [e[1], e[2]])).toEqual(
      all.body.output_ids.map((t: number) => [t, null]),
    );
    const from5 = await post('/generate', {
      input_ids: seq,
      sampling_params: sp,
      return_logprob: true,
      logprob_start_len: 5,
      return_text_in_logprobs: true,
    });
    close(from5.body.meta_info.input_token_logprobs, 5);
    expect(from5.body.meta_info.input_token_logprobs[0][2]).toBe(tokenizer.decode([seq[5]!]));
    // the default (-1): only the last prompt token, with a null logprob
    const dflt = await post('/generate', { input_ids: seq, sampling_params: sp, return_logprob: true });
    expect(dflt.body.meta_info.input_token_logprobs).toEqual([[null, seq.at(-1), null]]);
    // max_new_tokens 0 scores the prompt without sampling
    const scored = await post('/generate', {
      input_ids: seq,
      sampling_params: { max_new_tokens: 0 },
      return_logprob: true,
      logprob_start_len: 0,
    });
    expect(scored.body.output_ids).toEqual([]);
    expect(scored.body.meta_info.finish_reason).toEqual({ type: 'length', length: 0 });
    expect(scored.body.meta_info.input_token_logprobs).toEqual(all.body.meta_info.input_token_logprobs);
    // batched, with per-prompt starts and top-k
    const batch = await post('/generate', {
      input_ids: [seq, prompt],
      sampling_params: sp,
      return_logprob: true,
      logprob_start_len: [0, 3],
      top_logprobs_num: [2, 2],
    });
    expect(batch.status).toBe(200);
    close(batch.body[0].meta_info.input_token_logprobs, 0);
    expect(batch.body[1].meta_info.input_token_logprobs).toHaveLength(prompt.length - 3);
    const tops = batch.body[0].meta_info.input_top_logprobs;
    expect(tops[0]).toBeNull();
    expect(tops).toHaveLength(seq.length);
    for (const [j, top] of tops.slice(1).entries()) {
      expect(top).toHaveLength(2);
      expect(top[0][0]).toBeGreaterThanOrEqual(batch.body[0].meta_info.input_token_logprobs[j + 1][0] - 1e-9);
    }
    expect(batch.body[0].meta_info.output_top_logprobs).toHaveLength(4);
    const past = await post('/generate', {
      input_ids: [1, 2, 3],
      sampling_params: sp,
      return_logprob: true,
      logprob_start_len: 3,
    });
    expect(past.status).toBe(400);
    expect(past.body.error.message).toMatch(
      /logprob_start_len=3 is higher than the number of input tokens len\(input_ids\)=3/,
    );
  });

  it('/generate with stream sends server-sent events ending in [DONE]', async () => {
    const res = await fetch(`${server.url}/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        input_ids: afterTool,
        sampling_params: { temperature: 0, max_new_tokens: 60 },
        stream: true,
      }),
    });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const events = (await res.text()).split('\n\n').filter(Boolean);
    expect(events.at(-1)).toBe('data: [DONE]');
    expect(JSON.parse(events[0]!.slice('data: '.length)).text).toBe('The answer is 42.');
  });

  it('/tokenize and /detokenize agree with the checkpoint tokenizer', async () => {
    const text = '<|im_start|>user\nWhat is 6*7?<|im_end|>';
    const t = await post('/tokenize', { model: 'tiny', prompt: text, add_special_tokens: false });
    expect(t.body.tokens).toEqual(tokenizer.encode(text));
    expect(t.body.count).toBe(t.body.tokens.length);
    const d = await post('/detokenize', { model: 'tiny', tokens: t.body.tokens });
    expect(d.body.prompt).toBe(text);
    expect(d.body.text).toBe(text);
  });

  it('/metrics does not count the scrape itself as a waiting request', async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).toMatch(/vllm:num_requests_waiting\{model_name="tiny",engine="0"\} 0/);
    expect(text).toMatch(/vllm:num_requests_running\{model_name="tiny",engine="0"\} 0/);
  });
});

describe('remote adapters against the process', () => {
  it('connect() reads the model name and compares tokenizers through /tokenize', async () => {
    const vllm = createVllmAdapter({ baseUrl: server.url, tokenizer });
    expect(await vllm.connect()).toEqual({ model: 'tiny', tokenizerCheck: 'tokenize' });
    await vllm.close();
    const other = createCharTokenizer({ specialTokens: ['<|im_end|>', '<|im_start|>', '<|endoftext|>'] });
    const sglang = createSglangAdapter({ baseUrl: server.url, tokenizer: other });
    await expect(sglang.connect()).rejects.toThrow(
      /tokenizes differently from the local tokenizer .*serve the same checkpoint/,
    );
    await sglang.close();
  });
});

/** A front for the server that answers /tokenize with 404, as servers without that route do. */
async function withoutTokenize(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const front = createServer(async (req, res) => {
    if (req.url === '/tokenize') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
      return;
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const r = await fetch(`${target}${req.url}`, {
      method: req.method ?? 'GET',
      headers: { 'content-type': 'application/json' },
      ...(req.method === 'POST' ? { body: Buffer.concat(chunks) } : {}),
    });
    res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
    res.end(Buffer.from(await r.arrayBuffer()));
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(front.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => front.close(() => r())),
  };
}

describe('tokenizer agreement without /tokenize', () => {
  it('falls back to a one-token generation, decoded locally', async () => {
    const front = await withoutTokenize(server.url);
    try {
      const vllm = createVllmAdapter({ baseUrl: front.url, tokenizer });
      expect(await vllm.connect()).toEqual({ model: 'tiny', tokenizerCheck: 'generate' });
      await vllm.close();
      const sglang = createSglangAdapter({ baseUrl: front.url, tokenizer });
      expect((await sglang.connect()).tokenizerCheck).toBe('generate');
      await sglang.close();
      // A local tokenizer whose ids mean other text is caught by the generation too.
      const shifted = {
        encode: (t: string) => tokenizer.encode(t),
        decode: (ids: readonly number[]) => `${tokenizer.decode(ids)}?`,
      };
      const wrong = createVllmAdapter({ baseUrl: front.url, tokenizer: shifted });
      await expect(wrong.connect()).rejects.toThrow(
        /generated token \d+ as .*the local tokenizer decodes it as/,
      );
      await wrong.close();
    } finally {
      await front.close();
    }
  });
});

describe('connectEngines and syncEngineWeights (what --engine URL[,URL…] uses)', () => {
  it('connects every URL or none, and syncs all of them to one policy version', async () => {
    const dead = `http://127.0.0.1:${new URL(server.url).port === '1' ? 2 : 1}`;
    await expect(connectEngines({ kind: 'sglang', urls: [server.url, dead], tokenizer })).rejects.toThrow(
      /engine at http:\/\/127\.0\.0\.1:[12] is not reachable/,
    );
    const engines = await connectEngines({ kind: 'sglang', urls: [server.url, server.url], tokenizer });
    expect(engines.map((e) => e.info)).toEqual([
      { model: 'tiny', tokenizerCheck: 'tokenize' },
      { model: 'tiny', tokenizerCheck: 'tokenize' },
    ]);
    // Reload the launch checkpoint (same weights) as policy version 5 on both.
    await syncEngineWeights(engines, { kind: 'disk', path: join(dir, 'ckpt'), version: 5 });
    expect(engines.map((e) => e.policyVersion)).toEqual([5, 5]);
    const info = (await (await fetch(`${server.url}/get_model_info`)).json()) as { weight_version: string };
    expect(info.weight_version).toBe('5');
    await Promise.all(engines.map((e) => e.close()));
  });
});

describe('weight sync', () => {
  it('after update_weights_from_disk the logprobs of a fixed sequence are the new model in-process, to 1e-5', async () => {
    const seq = afterTool;
    const before = await servedLogprobs(seq);
    const mine = inProcessLogprobs(model, seq);
    for (const [i, x] of before.entries()) expect(Math.abs(x - mine[i]!)).toBeLessThan(1e-5);

    const other = createModel(model.config, { seed: 7 });
    await saveModel(other, join(dir, 'step-1'));
    const ok = await post('/update_weights_from_disk', {
      model_path: join(dir, 'step-1'),
      weight_version: '1',
    });
    expect(ok).toEqual({
      status: 200,
      body: { success: true, message: 'Succeeded to update model weights.', num_paused_requests: 0 },
    });
    const after = await servedLogprobs(seq);
    const theirs = inProcessLogprobs(other, seq);
    for (const [i, x] of after.entries()) expect(Math.abs(x - theirs[i]!)).toBeLessThan(1e-5);
    expect(Math.max(...after.map((x, i) => Math.abs(x - before[i]!)))).toBeGreaterThan(1e-2);
    const info = (await (await fetch(`${server.url}/get_model_info`)).json()) as { weight_version: string };
    expect(info.weight_version).toBe('1');

    const bad = await post('/update_weights_from_disk', { model_path: join(dir, 'nope') });
    expect(bad.status).toBe(400);
    expect(bad.body.success).toBe(false);
    expect(bad.body.message).toMatch(/Failed to load model weights from .*nope.*no config\.json/);
    // The refused path left the served weights alone.
    expect(await servedLogprobs(seq)).toEqual(after);
  });
});
