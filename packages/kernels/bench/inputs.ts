import { Rng } from '@agentrl/protocol';
import type { PolicyLossInputs } from '../src/index.js';

/** Fast synthetic inputs (no float64 log-softmax pass): the benchmark times kernels, not data prep. */
export function benchInputs(T: number, V: number, seqLen = 512): PolicyLossInputs {
  const logits = new Float32Array(T * V);
  const rng = Rng.seeded(12345);
  for (let i = 0; i < logits.length; i++) logits[i] = rng.next() - 0.5;
  const targets = new Int32Array(T);
  const oldLogprobs = new Float32Array(T);
  const advantages = new Float32Array(T);
  const lossMask = new Uint8Array(T).fill(1);
  for (let t = 0; t < T; t++) {
    targets[t] = (t * 7919) % V;
    oldLogprobs[t] = -Math.log(V) + ((t % 7) - 3) * 0.05;
    advantages[t] = Math.floor(t / seqLen) % 2 === 0 ? 1 : -1;
  }
  const S = Math.ceil(T / seqLen);
  const cuSeqlens = new Int32Array(S + 1);
  for (let s = 1; s <= S; s++) cuSeqlens[s] = Math.min(T, s * seqLen);
  return { logits, vocabSize: V, targets, oldLogprobs, advantages, lossMask, cuSeqlens };
}
