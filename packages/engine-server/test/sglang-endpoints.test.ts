import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCharTokenizer, createModel, type Model, saveModel, writeSafetensors } from '@agentrl/engine';
import { charModelConfig } from '@agentrl/engine/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer } from './helpers/serve-process.js';

const tokenizer = createCharTokenizer();
let dir: string;
let model: Model;
let server: Awaited<ReturnType<typeof spawnServer>>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentrl-sglang-'));
  model = createModel(charModelConfig(), { seed: 3 });
  await saveModel(model, join(dir, 'ckpt'));
  server = await spawnServer(['--checkpoint', join(dir, 'ckpt'), '--served-model-name', 'tiny']);
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

const call = async (path: string, body?: unknown, method = 'POST') => {
  const res = await fetch(`${server.url}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: replies are read field by field in the assertions
  return { status: res.status, body: (text ? JSON.parse(text) : null) as any };
};
const ids = tokenizer.encode('hello');
/** The sampled logprob of a fixed one-token continuation: moves when the weights move. */
const score = async () =>
  (
    await call('/generate', {
      input_ids: ids,
      sampling_params: { temperature: 0, max_new_tokens: 1 },
      return_logprob: true,
    })
  ).body.meta_info.output_token_logprobs[0][0] as number;

describe("SGLang's native endpoints, as verl's AsyncHttpServerAdapter calls them", () => {
  it('/generate with sampling_params.n = 2 on one prompt answers a list of two outputs; PUT works too', async () => {
    const r = await call('/generate', { input_ids: ids, sampling_params: { max_new_tokens: 6, n: 2 } });
    expect(r.status).toBe(200);
    expect(Array.isArray(r.body)).toBe(true);
    expect(r.body).toHaveLength(2);
    expect(new Set(r.body.map((o: { meta_info: { id: string } }) => o.meta_info.id)).size).toBe(2);
    const batch = await call('/generate', {
      text: ['ab', 'cd'],
      sampling_params: { max_new_tokens: 3, n: 3, temperature: 0 },
    });
    expect(batch.body).toHaveLength(6);
    // prompt-major: the three copies of a greedy prompt agree
    expect(batch.body[1].output_ids).toEqual(batch.body[0].output_ids);
    const put = await call('/generate', { input_ids: ids, sampling_params: { max_new_tokens: 2 } }, 'PUT');
    expect(put.status).toBe(200);
    expect(put.body.output_ids).toHaveLength(2);
  });

  it('release_memory_occupation refuses generation (503) until resume_memory_occupation; health_generate follows', async () => {
    expect((await call('/health_generate', undefined, 'GET')).status).toBe(200);
    expect(await call('/release_memory_occupation', { tags: ['kv_cache', 'weights'] })).toEqual({
      status: 200,
      body: null, // an empty body
    });
    const refused = await call('/generate', { input_ids: ids, sampling_params: { max_new_tokens: 2 } });
    expect(refused.status).toBe(503);
    expect(refused.body.error.message).toMatch(/released.*resume_memory_occupation/);
    expect((await call('/health_generate', undefined, 'GET')).status).toBe(503);
    expect((await call('/resume_memory_occupation', {})).status).toBe(200);
    expect((await call('/health_generate', undefined, 'GET')).status).toBe(200);
    const bad = await call('/release_memory_occupation', { tags: ['cuda_graph'] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/"cuda_graph".*"kv_cache" or "weights"/);
  });

  it("vLLM's /sleep, /is_sleeping and /wake_up", async () => {
    expect((await call('/sleep?level=1', undefined)).status).toBe(200);
    expect((await call('/is_sleeping', undefined, 'GET')).body).toEqual({ is_sleeping: true });
    expect((await call('/wake_up', undefined)).status).toBe(200);
    expect((await call('/is_sleeping', undefined, 'GET')).body).toEqual({ is_sleeping: false });
  });

  it('update_weights_from_tensor copies the tensors in place and bumps the version; a bad name leaves them', async () => {
    const before = await score();
    const name = 'model.norm.weight';
    const p = model.parameter(name)!;
    const path = join(dir, 'update.safetensors');
    await writeSafetensors(path, [
      { name, dtype: 'F32', shape: p.shape, data: p.data.map((_, i) => (i % 2 ? 3 : -2)) },
    ]);
    const blob = (await readFile(path)).toString('base64');
    const ok = await call('/update_weights_from_tensor', {
      serialized_named_tensors: [blob],
      load_format: 'safetensors',
      weight_version: 'v7',
    });
    expect(ok).toEqual({
      status: 200,
      body: { success: true, message: 'Succeeded to update model weights.' },
    });
    const after = await score();
    expect(Math.abs(after - before)).toBeGreaterThan(1e-3);
    expect((await call('/get_model_info', undefined, 'GET')).body.weight_version).toBe('v7');

    await writeSafetensors(path, [
      { name: 'model.nope', dtype: 'F32', shape: [1], data: new Float32Array(1) },
    ]);
    const bad = await call('/update_weights_from_tensor', {
      serialized_named_tensors: [(await readFile(path)).toString('base64')],
      load_format: 'safetensors',
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false });
    expect(bad.body.message).toMatch(/model\.nope is not a parameter of the served model/);
    const pickled = await call('/update_weights_from_tensor', { serialized_named_tensors: ['gASV'] });
    expect(pickled.status).toBe(400);
    expect(pickled.body.message).toMatch(/load_format null .*base64 safetensors bytes/);
    expect(await score()).toBe(after);
  });

  it("/v1/models carries vLLM's permission card; errors have vLLM's {error: {…}} body", async () => {
    const models = await call('/v1/models', undefined, 'GET');
    expect(models.body.data[0].permission[0]).toMatchObject({
      object: 'model_permission',
      allow_sampling: true,
      allow_logprobs: true,
      organization: '*',
    });
    expect(models.body.data[0].permission[0].id).toMatch(/^modelperm-/);
    const err = await call('/v1/completions', { model: 'other', prompt: 'x' });
    expect(err).toEqual({
      status: 404,
      body: {
        error: {
          message: expect.stringMatching(/`other` does not exist/),
          type: 'NotFoundError',
          param: null,
          code: 404,
        },
      },
    });
  });
});

describe('presence / frequency penalties', () => {
  it('move the draw as vLLM does, while the logprobs stay the model’s (prompt_logprobs of the same tokens)', async () => {
    const base = {
      model: 'tiny',
      prompt: ids,
      max_tokens: 24,
      temperature: 0,
      logprobs: 0,
      ignore_eos: true,
    };
    const plain = await call('/v1/completions', { ...base, return_token_ids: true });
    const penalised = await call('/v1/completions', {
      ...base,
      return_token_ids: true,
      presence_penalty: 1.5,
      frequency_penalty: 1,
    });
    expect(penalised.status).toBe(200);
    const tokens = penalised.body.choices[0].token_ids as number[];
    expect(tokens).not.toEqual(plain.body.choices[0].token_ids);
    const seq = [...ids, ...tokens];
    const scored = await call('/v1/completions', {
      model: 'tiny',
      prompt: seq,
      max_tokens: 0,
      prompt_logprobs: 0,
    });
    const model = (scored.body.choices[0].prompt_logprobs as Array<Record<string, { logprob: number }>>)
      .slice(ids.length)
      .map((e, i) => e[String(tokens[i])]!.logprob);
    const recorded = penalised.body.choices[0].logprobs.token_logprobs as number[];
    for (const [i, lp] of recorded.entries()) expect(lp).toBeCloseTo(model[i]!, 4);
    const sg = await call('/generate', {
      input_ids: ids,
      sampling_params: {
        temperature: 0,
        max_new_tokens: 24,
        ignore_eos: true,
        presence_penalty: 1.5,
        frequency_penalty: 1,
      },
    });
    expect(sg.body.output_ids).toEqual(tokens);
    const bad = await call('/v1/completions', { ...base, presence_penalty: 2.5 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/presence_penalty must be in \[-2, 2\], got 2\.5/);
  });
});

/**
 * The payloads verl's `AsyncHttpServerAdapter` (`verl/workers/rollout/sglang_rollout/
 * http_server_engine.py`) sends, as it builds them: None-valued keys dropped from generate, `tags:
 * null` and its `reset_connector` on release, `{tags: null}` on resume, `flush_cache` as a GET with a
 * query; its `_read_async_response` reads an empty 200 body as {}.
 */
describe("verl's SGLang adapter payloads", () => {
  it('generate, release (all tags), resume, flush_cache, in the order a colocated step sends them', async () => {
    const gen = await call('/generate', {
      sampling_params: {
        temperature: 1.0,
        top_p: 1.0,
        top_k: -1,
        max_new_tokens: 5,
        n: 1,
        ignore_eos: false,
      },
      input_ids: ids,
      return_logprob: true,
    });
    expect(gen.status).toBe(200);
    expect(gen.body.output_ids.length).toBeGreaterThan(0);
    expect(gen.body.meta_info.output_token_logprobs).toHaveLength(gen.body.output_ids.length);
    const release = await fetch(`${server.url}/release_memory_occupation`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tags: null, reset_connector: true }),
    });
    expect(release.status).toBe(200);
    expect(release.headers.get('content-length')).toBe('0');
    expect((await call('/generate', { input_ids: ids, sampling_params: { max_new_tokens: 1 } })).status).toBe(
      503,
    );
    expect((await call('/resume_memory_occupation', { tags: null })).status).toBe(200);
    const flush = await fetch(`${server.url}/flush_cache?reset_connector=true`);
    expect(flush.status).toBe(200);
    expect((await call('/generate', { input_ids: ids, sampling_params: { max_new_tokens: 1 } })).status).toBe(
      200,
    );
  });
});
