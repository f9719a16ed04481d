import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packSequences } from '../src/batch.js';
import { loadModel, saveModel } from '../src/checkpoint.js';
import { modelDtype, parseModelConfig, toHfConfigJson, toNativeConfig } from '../src/config.js';
import { createModel } from '../src/model.js';
import { createAdamW } from '../src/optimizer.js';
import { tinyConfig } from './helpers.js';

const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`./fixtures/configs/${name}.json`, import.meta.url), 'utf8')) as Record<
    string,
    unknown
  >;
const root = await mkdtemp(join(tmpdir(), 'agentrl-hfconfig-'));
afterAll(() => rm(root, { recursive: true, force: true }));

describe('config.json as transformers writes it: reading', () => {
  it('Qwen3-0.6B (v4 layout): head_dim 128, rope_theta 1e6, bf16', () => {
    const c = parseModelConfig(fixture('qwen3-0.6b'));
    expect(toNativeConfig(c)).toMatchObject({
      headDim: 128,
      ropeTheta: 1e6,
      kvHeads: 8,
      qkNorm: true,
      tied: true,
    });
    expect(modelDtype(c)).toBe('bfloat16');
  });

  it('Qwen2.5 (no head_dim): hidden_size / heads, q/k/v bias', () => {
    const c = parseModelConfig(fixture('qwen2.5-0.5b-instruct'));
    expect(toNativeConfig(c)).toMatchObject({ headDim: 64, ropeTheta: 1e6, qkvBias: true, oBias: false });
  });

  it('the transformers v5 layout: rope_parameters.rope_theta and dtype are read', () => {
    const c = parseModelConfig(fixture('qwen3-v5'));
    expect(toNativeConfig(c).ropeTheta).toBe(1e6);
    expect(modelDtype(c)).toBe('bfloat16');
    expect(c.layer_types).toEqual(['full_attention', 'full_attention']);
  });

  it('refuses RoPE scaling it does not implement, naming the field and the type', () => {
    expect(() => parseModelConfig(fixture('llama-3.1-8b'))).toThrow(/rope_scaling\.rope_type is "llama3"/);
    const v5 = fixture('qwen3-v5');
    for (const rope_type of ['yarn', 'linear', 'dynamic', 'longrope', 'llama3']) {
      expect(() =>
        parseModelConfig({ ...v5, rope_parameters: { rope_theta: 1e6, rope_type, factor: 4 } }),
      ).toThrow(new RegExp(`rope_parameters\\.rope_type is "${rope_type}"`));
    }
    // Qwen2.5's documented YaRN block uses the older `type` key
    expect(() =>
      parseModelConfig({
        ...fixture('qwen2.5-0.5b-instruct'),
        rope_scaling: { factor: 4.0, original_max_position_embeddings: 32768, type: 'yarn' },
      }),
    ).toThrow(/rope_scaling\.rope_type is "yarn"/);
    expect(() =>
      parseModelConfig({ ...v5, rope_parameters: { full_attention: { rope_theta: 1e6 } } }),
    ).toThrow(/per-layer-type/);
    expect(() => parseModelConfig({ ...v5, rope_theta: 10000 })).toThrow(
      /rope_theta 10000 but rope_parameters/,
    );
    expect(() => parseModelConfig({ ...v5, dtype: 'float64' })).toThrow(/dtype is "float64"/);
  });

  it('rope_parameters.rope_theta reaches the native model (a 1e6-theta model does not run at 10000)', () => {
    const batch = packSequences([[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]]);
    const logits = (extra: Record<string, unknown>) =>
      createModel({ ...tinyConfig(), ...extra }, { seed: 5, training: false }).forwardLogits(batch);
    const v5 = logits({ rope_parameters: { rope_theta: 1e6, rope_type: 'default' } });
    const v4 = logits({ rope_theta: 1e6 });
    const base = logits({});
    expect(Buffer.from(v5.buffer).equals(Buffer.from(v4.buffer))).toBe(true);
    expect(Buffer.from(v5.buffer).equals(Buffer.from(base.buffer))).toBe(false);
  });
});

describe('config.json as transformers writes it: writing', () => {
  it('always writes head_dim, both RoPE layouts and both dtype names, keys sorted', async () => {
    // head_dim 8 differs from Qwen3Config's default of 128: without it from_pretrained builds another model
    // no head_dim and no num_key_value_heads in the input: both are derived, and both must be written
    const { num_key_value_heads: _kv, head_dim: _hd, ...mha } = tinyConfig();
    const model = createModel(mha, { seed: 1 });
    const dir = join(root, 'written');
    await saveModel(model, dir);
    const text = await readFile(join(dir, 'config.json'), 'utf8');
    const json = JSON.parse(text) as Record<string, unknown>;
    expect(json).toMatchObject({
      head_dim: 8,
      num_key_value_heads: 4,
      rope_theta: 10000,
      rope_scaling: null,
      rope_parameters: { rope_theta: 10000, rope_type: 'default' },
      torch_dtype: 'float32',
      dtype: 'float32',
    });
    expect(Object.keys(json)).toEqual(Object.keys(json).sort());
    expect(text).toBe(`${JSON.stringify(json, null, 2)}\n`);
  });

  it('Qwen2.5 without head_dim gets it written; a v5 config keeps its rope_theta and dtype', () => {
    const q25 = toHfConfigJson(parseModelConfig(fixture('qwen2.5-0.5b-instruct')), 'bfloat16');
    expect(q25.head_dim).toBe(64);
    const v5 = toHfConfigJson(parseModelConfig(fixture('qwen3-v5')), 'bfloat16');
    expect(v5).toMatchObject({
      rope_theta: 1e6,
      rope_parameters: { rope_theta: 1e6, rope_type: 'default' },
      dtype: 'bfloat16',
      torch_dtype: 'bfloat16',
      layer_types: ['full_attention', 'full_attention'],
    });
    for (const name of ['qwen3-0.6b', 'qwen2.5-0.5b-instruct', 'qwen3-v5']) {
      const c = parseModelConfig(fixture(name));
      const again = parseModelConfig(toHfConfigJson(c, modelDtype(c)));
      expect(toNativeConfig(again), name).toEqual(toNativeConfig(c));
    }
  });

  it('a bf16 checkpoint loads and saves in bf16 and reports model.dtype', async () => {
    const dir = join(root, 'bf16');
    const model = createModel({ ...tinyConfig(), torch_dtype: 'bfloat16' }, { seed: 2 });
    expect(model.dtype).toBe('bfloat16');
    await saveModel(model, dir);
    const loaded = await loadModel(dir, { training: false });
    expect(loaded.dtype).toBe('bfloat16');
    const header = await readFile(join(dir, 'model.safetensors'));
    const n = Number(header.readBigUInt64LE(0));
    expect(JSON.parse(header.subarray(8, 8 + n).toString())['model.norm.weight'].dtype).toBe('BF16');
    // training keeps fp32 master weights and fp32 moments: an update is not rounded to bf16
    loaded.enableTraining();
    const opt = createAdamW(loaded, { lr: 1e-4 });
    loaded.sftLoss(packSequences([[1, 2, 3, 4]]), [1, 1, 1, 1]);
    opt.step();
    const w = new Uint32Array(loaded.parameter('model.layers.0.mlp.up_proj.weight')!.data.slice().buffer);
    expect(w.some((b) => (b & 0xffff) !== 0)).toBe(true);
    expect(opt.state().m.some((x) => x !== 0)).toBe(true);
  });
});
