import { describe, expect, it } from 'vitest';
import { parseModelConfig, toNativeConfig } from './config.js';

/** Qwen3-0.6B's config.json as published. */
const qwen3 = {
  architectures: ['Qwen3ForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  head_dim: 128,
  hidden_act: 'silu',
  hidden_size: 1024,
  initializer_range: 0.02,
  intermediate_size: 3072,
  max_position_embeddings: 40960,
  max_window_layers: 28,
  model_type: 'qwen3',
  num_attention_heads: 16,
  num_hidden_layers: 28,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_scaling: null,
  rope_theta: 1000000,
  sliding_window: null,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.51.0',
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

describe('model config', () => {
  it('reads a real Qwen3 config.json and keeps fields it does not use', () => {
    const c = parseModelConfig(qwen3);
    expect(c.max_window_layers).toBe(28);
    expect(toNativeConfig(c)).toMatchObject({
      qkNorm: true,
      qkvBias: false,
      oBias: false,
      headDim: 128,
      kvHeads: 8,
      tied: true,
    });
  });

  it('derives Qwen2 biases and Llama defaults', () => {
    const base = {
      vocab_size: 10,
      hidden_size: 8,
      intermediate_size: 16,
      num_hidden_layers: 1,
      num_attention_heads: 2,
    };
    expect(toNativeConfig(parseModelConfig({ ...base, architectures: ['Qwen2ForCausalLM'] }))).toMatchObject({
      qkvBias: true,
      oBias: false,
      qkNorm: false,
      kvHeads: 2,
      headDim: 4,
    });
    expect(
      toNativeConfig(
        parseModelConfig({ ...base, architectures: ['LlamaForCausalLM'], attention_bias: true }),
      ),
    ).toMatchObject({ qkvBias: true, oBias: true });
  });

  it('refuses what it does not implement, naming the field', () => {
    expect(() => parseModelConfig({ ...qwen3, num_key_value_heads: 5 })).toThrow(
      /multiple of num_key_value_heads/,
    );
    expect(() => parseModelConfig({ ...qwen3, rope_scaling: { type: 'yarn', factor: 4 } })).toThrow(
      /rope_scaling/,
    );
    expect(() => parseModelConfig({ ...qwen3, use_sliding_window: true })).toThrow(/use_sliding_window/);
    expect(() => parseModelConfig({ ...qwen3, architectures: ['MixtralForCausalLM'] })).toThrow(
      /MixtralForCausalLM.*supported/,
    );
  });
});
