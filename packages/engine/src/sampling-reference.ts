import type { SamplingParams } from '@agentrl/protocol';
import type { SamplerLoops } from './native.js';
import { drawInIdOrder, type SampledToken, temperedProbs } from './sampling.js';

/**
 * The plain reference of sampleToken: the same distribution, computed by sorting the whole
 * vocabulary, its loops in JavaScript. Kept beside the fast path for its test and benchmark, not for use.
 */
export function sampleTokenReference(
  logits: Float32Array,
  params: Pick<SamplingParams, 'temperature' | 'topK' | 'topP'>,
  random: () => number,
): SampledToken {
  const V = logits.length;
  const probs = new Float64Array(V);
  const { sum, argmax, logprobOf } = temperedProbs(logits, params.temperature, probs, jsSamplerLoops);
  if (params.temperature === 0) return { token: argmax, logprob: logprobOf(argmax) };
  const topK = params.topK > 0 && params.topK < V ? params.topK : V;
  if (topK === V && params.topP >= 1) {
    const token = drawInIdOrder(probs, V, sum, argmax, random, jsSamplerLoops);
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
 * sampleToken's vocabulary loops in float64 JavaScript: the code it ran before the native sampler,
 * which the native loops (native/src/engine/sampler_bindings.cc) match bit for bit. Tests and the
 * bench run sampleTokenWith(jsSamplerLoops, ...) beside sampleToken.
 */
export const jsSamplerLoops: SamplerLoops = {
  temperedProbs(logits, t, probs) {
    const V = logits.length;
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
    return { sum, max, argmax };
  },
  drawInIdOrder(probs, n, r) {
    for (let i = 0; i < n; i++) {
      r -= probs[i] ?? 0;
      if (r <= 0) return i;
    }
    return -1;
  },
  collectAtLeast(probs, n, tau, values) {
    let kept = 0;
    let mass = 0;
    for (let i = 0; i < n; i++) {
      const p = probs[i] ?? 0;
      if (p >= tau) {
        values[kept++] = p;
        mass += p;
      }
    }
    return { n: kept, mass };
  },
  nthEqual(probs, n, p, rank) {
    for (let i = 0; i < n; i++) {
      if (probs[i] === p) {
        if (rank === 0) return i;
        rank--;
      }
    }
    return -1;
  },
};
