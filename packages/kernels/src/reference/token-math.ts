import { type AggregationOptions, lossGradientWeights } from '@agentrl/grpo';
import type { PolicyLossConfig } from '../config.js';
import type { PolicyLossMetrics, TokenInputs } from '../types.js';
import { Clip, surrogate } from './surrogate.js';

export interface TokenMathResult {
  loss: number;
  /** [T] d loss / d logp_t (already weighted by the aggregation). */
  gradLogp: Float64Array;
  metrics: PolicyLossMetrics;
}

/**
 * Everything after the per-row log-normaliser: ratios (token or GSPO sequence level, log-ratio
 * clamped), clipped surrogate, aggregation, metrics and d loss / d logp. O(T); shared by the
 * reference and the WebGPU backend (the C++ twin is native/src/kernels/token_math.h).
 */
export function tokenMath(
  cfg: PolicyLossConfig,
  inp: TokenInputs,
  logp: ArrayLike<number>,
  entropy?: ArrayLike<number>,
): TokenMathResult {
  const { oldLogprobs: old, advantages: adv, lossMask: mask, cuSeqlens: cu } = inp;
  const T = mask.length;
  const M = cfg.maxLogRatio;
  const w = lossGradientWeights({ lossMask: mask, cuSeqlens: cu }, aggregationOptions(cfg));
  const grad = new Float64Array(T);
  let loss = 0;
  const counts = [0, 0, 0, 0];
  let n = 0;
  let k3 = 0;
  let k1 = 0;
  let ent = 0;
  for (let t = 0; t < T; t++) {
    if (mask[t] !== 1) continue;
    n++;
    const lr = Math.min(M, Math.max(-M, logp[t]! - old[t]!));
    k3 += Math.exp(lr) - 1 - lr;
    k1 -= lr;
    if (entropy) ent += entropy[t]!;
  }
  if (cfg.ratioLevel === 'token') {
    for (let t = 0; t < T; t++) {
      if (mask[t] !== 1) continue;
      const raw = logp[t]! - old[t]!;
      const lr = Math.min(M, Math.max(-M, raw));
      const r = Math.exp(lr);
      const s = surrogate(r, adv[t]!, cfg);
      counts[s.clip]!++;
      loss += w[t]! * s.loss;
      // torch.clamp passes no gradient outside [-M, M]
      grad[t] = raw >= -M && raw <= M ? w[t]! * s.dRatio * r : 0;
    }
  } else {
    for (let q = 0; q + 1 < cu.length; q++) {
      const a = cu[q]!;
      const b = cu[q + 1]!;
      let c = 0;
      let sum = 0;
      for (let t = a; t < b; t++) {
        if (mask[t] !== 1) continue;
        c++;
        sum += logp[t]! - old[t]!;
      }
      if (c === 0) continue;
      const raw = sum / c;
      const lr = Math.min(M, Math.max(-M, raw));
      const r = Math.exp(lr);
      let dR = 0;
      for (let t = a; t < b; t++) {
        if (mask[t] !== 1) continue;
        const s = surrogate(r, adv[t]!, cfg);
        counts[s.clip]!++;
        loss += w[t]! * s.loss;
        dR += w[t]! * s.dRatio;
      }
      const g = raw >= -M && raw <= M ? (dR * r) / c : 0;
      for (let t = a; t < b; t++) if (mask[t] === 1) grad[t] = g;
    }
  }
  const d = Math.max(n, 1);
  return {
    loss,
    gradLogp: grad,
    metrics: {
      tokens: n,
      clipFracLow: counts[Clip.Low]! / d,
      clipFracHigh: counts[Clip.High]! / d,
      clipFracDual: counts[Clip.Dual]! / d,
      approxKl: k3 / d,
      ppoKl: k1 / d,
      entropy: entropy ? ent / d : Number.NaN,
    },
  };
}

/** The kernel config's aggregation as @agentrl/grpo's `lossGradientWeights` takes it. */
export function aggregationOptions(cfg: PolicyLossConfig): AggregationOptions {
  return {
    mode: cfg.aggregation,
    ...(cfg.horizon !== undefined && { horizon: cfg.horizon }),
    ...(cfg.tokenCount !== undefined && { tokenCount: cfg.tokenCount }),
    ...(cfg.seqCount !== undefined && { seqCount: cfg.seqCount }),
  };
}
