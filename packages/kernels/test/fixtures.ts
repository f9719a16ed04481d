import { Rng } from '@agentrl/protocol';
import type { FusedLinearInputs, PolicyLossInputs } from '../src/index.js';

/** Uniform draws in [0, 1) from protocol's Rng (the one PRNG), seeded so failures reproduce. */
export function rng(seed: number): () => number {
  const g = Rng.seeded(seed);
  return () => g.next();
}

export interface Shape {
  seqLens: number[];
  V: number;
  seed: number;
  /** logits scale (std-ish) */
  scale?: number;
  /** spread of old logprobs around the new ones (controls how often clipping fires) */
  drift?: number;
  maskRate?: number;
  zeroAdvantages?: boolean;
}

/** Random packed inputs; old logprobs near the true new ones so ratios land around the clip range. */
export function makeInputs(s: Shape): PolicyLossInputs & { logits: Float32Array } {
  const r = rng(s.seed);
  const T = s.seqLens.reduce((a, b) => a + b, 0);
  const V = s.V;
  const logits = new Float32Array(T * V);
  const scale = s.scale ?? 3;
  for (let i = 0; i < logits.length; i++) logits[i] = (r() * 2 - 1) * scale;
  const targets = new Int32Array(T);
  for (let t = 0; t < T; t++) targets[t] = Math.floor(r() * V);
  const cuSeqlens = new Int32Array(s.seqLens.length + 1);
  s.seqLens.forEach((n, i) => {
    cuSeqlens[i + 1] = cuSeqlens[i]! + n;
  });
  const advantages = new Float32Array(T);
  const lossMask = new Uint8Array(T);
  for (let q = 0; q < s.seqLens.length; q++) {
    const a = s.zeroAdvantages ? 0 : r() * 2 - 1;
    for (let t = cuSeqlens[q]!; t < cuSeqlens[q + 1]!; t++) {
      advantages[t] = a;
      lossMask[t] = r() < (s.maskRate ?? 0.8) ? 1 : 0;
    }
  }
  const inp = {
    logits,
    vocabSize: V,
    targets,
    oldLogprobs: new Float32Array(T),
    advantages,
    lossMask,
    cuSeqlens,
  };
  resetOldLogprobs(inp, s.drift ?? 0.4, r);
  return inp;
}

/** old logp = true new logp (float64) + uniform noise of this width; call again after editing logits. */
export function resetOldLogprobs(
  inp: PolicyLossInputs & { logits: Float32Array },
  drift: number,
  r = rng(99),
): void {
  const { logits, vocabSize: V, targets } = inp;
  for (let t = 0; t < targets.length; t++) {
    let m = Number.NEGATIVE_INFINITY;
    for (let j = 0; j < V; j++) m = Math.max(m, logits[t * V + j]!);
    let z = 0;
    for (let j = 0; j < V; j++) z += Math.exp(logits[t * V + j]! - m);
    const lp = logits[t * V + targets[t]!]! - m - Math.log(z);
    inp.oldLogprobs[t] = Number.isFinite(lp) ? lp + (r() * 2 - 1) * drift : -5;
  }
}

export function makeFusedInputs(s: Shape & { H: number }): FusedLinearInputs {
  const base = makeInputs({ ...s, V: s.V });
  const r = rng(s.seed + 7);
  const T = base.targets.length;
  const hidden = new Float32Array(T * s.H);
  const weight = new Float32Array(s.V * s.H);
  for (let i = 0; i < hidden.length; i++) hidden[i] = r() * 2 - 1;
  for (let i = 0; i < weight.length; i++) weight[i] = ((r() * 2 - 1) * 2) / Math.sqrt(s.H);
  const { logits: _l, ...rest } = base;
  return { ...rest, hidden, weight, hiddenSize: s.H, vocabSize: s.V };
}

/** max |a - b| / (atol + rtol * max|b|) <= 1 elementwise, reported as the worst ratio. */
export function worstError(a: ArrayLike<number>, b: ArrayLike<number>, atol: number, rtol: number): number {
  let worst = 0;
  for (let i = 0; i < b.length; i++) {
    const e = Math.abs(a[i]! - b[i]!) / (atol + rtol * Math.abs(b[i]!));
    if (!(e <= worst)) worst = Number.isNaN(e) ? Number.POSITIVE_INFINITY : e;
  }
  return worst;
}
