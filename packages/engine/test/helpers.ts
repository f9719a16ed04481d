export { tinyModelConfig as tinyConfig } from '../src/testing.js';

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
