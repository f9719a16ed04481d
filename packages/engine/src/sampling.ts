import { hashSeed, Rng, type SamplingParams } from '@agentrl/protocol';
import { type SamplerLoops, samplerBinding } from './native.js';

/** One request's uniform draws in [0, 1) for `sampleToken`: protocol's sfc32 `Rng` seeded by `seed`. */
export function createRng(seed: number): () => number {
  const rng = Rng.seeded(seed);
  return () => rng.next();
}

/**
 * The seed of one request's own random stream, keyed by a base seed, the request's cache id and its
 * token count (which grows every turn): independent of the order requests arrive in or are batched.
 */
export function requestSeed(base: number, key: string, position: number): number {
  return hashSeed(base, key, position);
}

export interface SampledToken {
  token: number;
  /**
   * log p(token) under softmax(logits / temperature) over the whole vocabulary (temperature 0: the
   * untempered softmax). Top-k/top-p only choose which tokens may be drawn; the logprob is not
   * renormalised over the kept set, so it matches what a trainer recomputes from the same logits.
   */
  logprob: number;
}

/**
 * probs[i] = exp(z_i / T - max / T) in float64 (the largest is exactly 1), their sum, the argmax
 * and the log-softmax of softmax(z / T) (T = 1 when temperature is 0). The exps, the sum and the
 * argmax run in `loops`: natively by default (native/src/engine/cpu/sampler.cc), bit for bit the
 * float64 JavaScript of jsSamplerLoops (V8's Math.exp per SIMD lane, the sum in id order).
 */
export function temperedProbs(
  logits: Float32Array,
  temperature: number,
  probs: Float64Array,
  loops: SamplerLoops = samplerBinding(),
): { sum: number; argmax: number; logprobOf: (token: number) => number } {
  const t = temperature > 0 ? temperature : 1;
  const { sum, max, argmax } = loops.temperedProbs(logits, t, probs);
  const logZ = max / t + Math.log(sum);
  return { sum, argmax, logprobOf: (token) => (logits[token] ?? 0) / t - logZ };
}

/** No top-k / top-p cut: one draw walks the whole vocabulary in id order. */
export function drawInIdOrder(
  probs: Float64Array,
  V: number,
  sum: number,
  argmax: number,
  random: () => number,
  loops: SamplerLoops = samplerBinding(),
) {
  const token = loops.drawInIdOrder(probs, V, random() * sum);
  return token < 0 ? argmax : token;
}

// Scratch reused across calls: a 151K vocabulary would otherwise allocate 1.2 MB per token.
let probsScratch = new Float64Array(0);
let valuesScratch = new Float64Array(0);

/**
 * Draws one token from one row of logits under temperature / top-k / top-p.
 *
 * Candidates are ordered by descending probability (ties by ascending id), cut to the first top-k,
 * then to the shortest prefix whose cumulative probability reaches top-p; one uniform draw picks
 * from the kept prefix in that order. The work is linear in the vocabulary plus a numeric sort of
 * the kept prefix's probabilities only (found by thresholds, see keptPrefix): the same token and
 * logprob as sorting the whole vocabulary (sampleTokenReference), for every draw. Its loops over
 * the vocabulary run natively (sampleTokenWith).
 */
export function sampleToken(
  logits: Float32Array,
  params: Pick<SamplingParams, 'temperature' | 'topK' | 'topP'>,
  random: () => number,
): SampledToken {
  return sampleTokenWith(samplerBinding(), logits, params, random);
}

/** sampleToken with its vocabulary loops in `loops` (jsSamplerLoops: the JavaScript it had before). */
export function sampleTokenWith(
  loops: SamplerLoops,
  logits: Float32Array,
  params: Pick<SamplingParams, 'temperature' | 'topK' | 'topP'>,
  random: () => number,
): SampledToken {
  const V = logits.length;
  if (probsScratch.length < V) probsScratch = new Float64Array(V);
  const probs = probsScratch;
  const { sum, argmax, logprobOf } = temperedProbs(logits, params.temperature, probs, loops);
  if (params.temperature === 0) return { token: argmax, logprob: logprobOf(argmax) };

  const topK = params.topK > 0 && params.topK < V ? params.topK : V;
  if (topK === V && params.topP >= 1) {
    const token = drawInIdOrder(probs, V, sum, argmax, random, loops);
    return { token, logprob: logprobOf(token) };
  }
  const { values, kept } = keptPrefix(loops, probs, V, sum, topK, params.topP);
  let keptSum = 0;
  for (let i = 0; i < kept; i++) keptSum += values[i] ?? 0;
  let r = random() * keptSum;
  let at = kept - 1;
  for (let i = 0; i < kept; i++) {
    r -= values[i] ?? 0;
    if (r <= 0) {
      at = i;
      break;
    }
  }
  const token = tokenAtRank(loops, probs, V, values, at);
  return { token, logprob: logprobOf(token) };
}

/**
 * The probabilities of the kept prefix of the descending order, largest first, and its length.
 * The set {i : p_i >= tau} is always a prefix of that order (ties included). A threshold is lowered
 * until that set holds enough candidates (top-k) or mass (top-p), then raised again by bisection
 * while it still does, so only a little more than the kept prefix is sorted; the cumulative sums
 * then run over exactly the sequence of values the full sort would give.
 */
function keptPrefix(
  loops: SamplerLoops,
  probs: Float64Array,
  V: number,
  sum: number,
  topK: number,
  topP: number,
): { values: Float64Array; kept: number } {
  if (valuesScratch.length < V) valuesScratch = new Float64Array(V);
  const limit = Math.min(topK, V);
  const collect = (tau: number) => loops.collectAtLeast(probs, V, tau, valuesScratch);
  // Enough candidates or mass (with slack for rounding) for the cut to fall inside the set.
  const enough = (c: { n: number; mass: number }) =>
    c.n >= limit || (topP < 1 && c.mass >= topP * sum * (1 - 1e-9));
  // probs are exp(z - max): the largest is exactly 1.
  let high = 1; // a threshold known not to be enough (or 1)
  for (const tau of [2 ** -6, 2 ** -12, 2 ** -20, 2 ** -30, 0]) {
    let c = collect(tau);
    if (tau > 0 && !enough(c)) {
      high = tau;
      continue;
    }
    let chosen = tau;
    let last = tau;
    // Narrow [chosen, high) geometrically while the candidate set is much larger than needed.
    for (let step = 0; step < 24 && c.n > 64 && chosen > 0; step++) {
      const mid = Math.sqrt(chosen * high);
      const m = collect(mid);
      last = mid;
      if (enough(m)) {
        const shrank = m.n < 0.8 * c.n;
        chosen = mid;
        c = m;
        if (!shrank) break; // a flat stretch: the kept prefix itself is large, stop scanning
      } else high = mid;
    }
    if (last !== chosen) c = collect(chosen); // the scratch holds the last set collected
    const values = valuesScratch.subarray(0, c.n).sort().reverse();
    let kept = -1;
    if (topP < 1) {
      let cum = 0;
      const upto = Math.min(limit, c.n);
      for (let i = 0; i < upto; i++) {
        cum += (values[i] ?? 0) / sum;
        if (cum >= topP) {
          kept = i + 1;
          break;
        }
      }
    }
    if (kept < 0 && c.n >= limit) kept = limit;
    if (kept > 0) return { values, kept };
    high = chosen; // the slack let a set through that the exact sums do not cut inside: go lower
  }
  throw new Error('sampleToken: unreachable, the last threshold keeps the whole vocabulary');
}

/** The id at position `at` of the descending order: the j-th smallest id among equal probabilities. */
function tokenAtRank(
  loops: SamplerLoops,
  probs: Float64Array,
  V: number,
  values: Float64Array,
  at: number,
): number {
  const p = values[at] ?? 0;
  let rank = 0;
  while (rank < at && values[at - rank - 1] === p) rank++;
  return Math.max(loops.nthEqual(probs, V, p, rank), 0);
}
