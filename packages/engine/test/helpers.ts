import type { ModelConfigInput } from '../src/config.js';

/** A tiny Qwen3-style config (GQA, q/k norm, tied) that runs in milliseconds. */
export function tinyConfig(overrides: Partial<ModelConfigInput> = {}): ModelConfigInput {
  return {
    architectures: ['Qwen3ForCausalLM'],
    vocab_size: 50,
    hidden_size: 32,
    intermediate_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 8,
    max_position_embeddings: 128,
    tie_word_embeddings: true,
    initializer_range: 0.1,
    ...overrides,
  };
}

/** log-softmax of row r of [rows, V] logits at column c. */
export function logSoftmaxAt(logits: Float32Array, V: number, r: number, c: number): number {
  let max = Number.NEGATIVE_INFINITY;
  for (let j = 0; j < V; j++) max = Math.max(max, logits[r * V + j] ?? 0);
  let sum = 0;
  for (let j = 0; j < V; j++) sum += Math.exp((logits[r * V + j] ?? 0) - max);
  return (logits[r * V + c] ?? 0) - max - Math.log(sum);
}
