import type { SamplingParams } from '@agentrl/protocol';

/** A small seeded PRNG (splitmix32 → mulberry32 family): uniform floats in [0, 1). */
export function createRng(seed: number): () => number {
  let s = (seed ^ 0x9e3779b9) >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The seed of one request's own random stream, keyed by a base seed, the request's cache id and its
 * token count (which grows every turn): independent of the order requests arrive in or are batched.
 */
export function requestSeed(base: number, key: string, position: number): number {
  let h = (0x811c9dc5 ^ base) >>> 0;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193) >>> 0;
  h = Math.imul(h ^ position, 0x01000193) >>> 0;
  return Math.imul(h ^ (h >>> 16), 0x45d9f3b) | 0;
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

/** Draws one token from one row of logits under temperature / top-k / top-p. */
export function sampleToken(
  logits: Float32Array,
  params: Pick<SamplingParams, 'temperature' | 'topK' | 'topP'>,
  random: () => number,
): SampledToken {
  const V = logits.length;
  const temperature = params.temperature > 0 ? params.temperature : 1;
  let max = Number.NEGATIVE_INFINITY;
  let argmax = 0;
  for (let i = 0; i < V; i++) {
    const z = logits[i] ?? 0;
    if (z > max) {
      max = z;
      argmax = i;
    }
  }
  const scaled = max / temperature;
  const probs = new Float64Array(V);
  let sum = 0;
  for (let i = 0; i < V; i++) {
    const p = Math.exp((logits[i] ?? 0) / temperature - scaled);
    probs[i] = p;
    sum += p;
  }
  const logZ = scaled + Math.log(sum);
  const logprobOf = (t: number) => (logits[t] ?? 0) / temperature - logZ;
  if (params.temperature === 0) return { token: argmax, logprob: logprobOf(argmax) };

  const topK = params.topK > 0 && params.topK < V ? params.topK : V;
  if (topK === V && params.topP >= 1) {
    let r = random() * sum;
    for (let i = 0; i < V; i++) {
      r -= probs[i] ?? 0;
      if (r <= 0) return { token: i, logprob: logprobOf(i) };
    }
    return { token: argmax, logprob: logprobOf(argmax) };
  }
  // Candidates by descending probability (ties by id), cut by top-k then by cumulative top-p mass.
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
