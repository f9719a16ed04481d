import type { SamplingParams } from '@agentrl/protocol';
import type { SampledToken } from './sampling.js';

/**
 * The plain reference of sampleToken: the same distribution, computed by sorting the whole
 * vocabulary. Kept beside the fast path for its test and benchmark, not for use.
 */
export function sampleTokenReference(
  logits: Float32Array,
  params: Pick<SamplingParams, 'temperature' | 'topK' | 'topP'>,
  random: () => number,
): SampledToken {
  const V = logits.length;
  const probs = new Float64Array(V);
  const { sum, argmax, logprobOf } = temperedProbsReference(logits, params.temperature, probs);
  if (params.temperature === 0) return { token: argmax, logprob: logprobOf(argmax) };
  const topK = params.topK > 0 && params.topK < V ? params.topK : V;
  if (topK === V && params.topP >= 1) {
    const token = drawInIdOrderReference(probs, V, sum, argmax, random);
    return { token, logprob: logprobOf(token) };
  }
  const order = Array.from({ length: V }, (_, i) => i).sort(
    (a, b) => (probs[b] ?? 0) - (probs[a] ?? 0) || a - b,
  );
  let kept = Math.min(topK, V);
  if (params.topP < 1) {
    let mass = 0;
    for (let i = 0; i < kept; i++) {
      mass += (probs[order[i] ?? 0] ?? 0) / sum;
      if (mass >= params.topP) {
        kept = i + 1;
        break;
      }
    }
  }
  let keptSum = 0;
  for (let i = 0; i < kept; i++) keptSum += probs[order[i] ?? 0] ?? 0;
  let r = random() * keptSum;
  for (let i = 0; i < kept; i++) {
    const t = order[i] ?? 0;
    r -= probs[t] ?? 0;
    if (r <= 0) return { token: t, logprob: logprobOf(t) };
  }
  const last = order[kept - 1] ?? argmax;
  return { token: last, logprob: logprobOf(last) };
}

/**
 * The float64 JavaScript the native temperedProbs must match bit for bit (sampling.ts): probs[i] =
 * Math.exp(z_i / T - max / T) in id order, their sequential sum, the first argmax, logZ.
 */
export function temperedProbsReference(
  logits: Float32Array,
  temperature: number,
  probs: Float64Array,
): { sum: number; argmax: number; logprobOf: (token: number) => number } {
  const V = logits.length;
  const t = temperature > 0 ? temperature : 1;
  let max = Number.NEGATIVE_INFINITY;
  let argmax = 0;
  for (let i = 0; i < V; i++) {
    const z = logits[i] ?? 0;
    if (z > max) {
      max = z;
      argmax = i;
    }
  }
  const scaled = max / t;
  let sum = 0;
  for (let i = 0; i < V; i++) {
    const p = Math.exp((logits[i] ?? 0) / t - scaled);
    probs[i] = p;
    sum += p;
  }
  const logZ = scaled + Math.log(sum);
  return { sum, argmax, logprobOf: (token) => (logits[token] ?? 0) / t - logZ };
}

/** The JavaScript walk the native drawInIdOrder matches: subtract probs in id order until r <= 0. */
export function drawInIdOrderReference(
  probs: Float64Array,
  V: number,
  sum: number,
  argmax: number,
  random: () => number,
) {
  let r = random() * sum;
  for (let i = 0; i < V; i++) {
    r -= probs[i] ?? 0;
    if (r <= 0) return i;
  }
  return argmax;
}
