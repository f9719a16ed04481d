import { tinyModelConfig } from '../src/testing.js';

export { tinyModelConfig as tinyConfig };

/**
 * A model that reaches every edge of the products: K = 300 > 256 (two k-blocks in the down
 * projection), widths that are not whole 16-column panels (vocab 50, intermediate 300), GQA and
 * q/k norm.
 */
export const edgeConfig = () =>
  tinyModelConfig({
    vocab_size: 50,
    hidden_size: 48,
    intermediate_size: 300,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 16,
    max_position_embeddings: 512,
  });

/** log-softmax of row r of [rows, V] logits at column c. */
export function logSoftmaxAt(logits: Float32Array, V: number, r: number, c: number): number {
  let max = Number.NEGATIVE_INFINITY;
  for (let j = 0; j < V; j++) max = Math.max(max, logits[r * V + j] ?? 0);
  let sum = 0;
  for (let j = 0; j < V; j++) sum += Math.exp((logits[r * V + j] ?? 0) - max);
  return (logits[r * V + c] ?? 0) - max - Math.log(sum);
}

/** max |a - b| / max(|b|, floor): one number per tensor, robust to entries near zero. */
export function rel(a: ArrayLike<number>, b: ArrayLike<number>, floor = 1e-12): number {
  let num = 0;
  let den = floor;
  for (let i = 0; i < b.length; i++) {
    num = Math.max(num, Math.abs((a[i] ?? 0) - (b[i] ?? 0)));
    den = Math.max(den, Math.abs(b[i] ?? 0));
  }
  return num / den;
}

export { describeEachCpuKernelPath, notExercised } from '@agentrl/native/testing';
