import { bf16ToFloat32 } from '../bf16.js';
import type { PolicyLossConfig } from '../config.js';
import type { GradTarget, PolicyLossInputs, PolicyLossResult } from '../types.js';
import { rowStats } from './row-stats.js';
import { tokenMath } from './token-math.js';

/**
 * The plain-TS policy loss, forward and backward, in float64: the oracle for every backend.
 * dlogits[t, j] = g_t / temperature * (onehot(target_t)_j - softmax(z_t)_j), g_t = d loss / d logp_t.
 */
export function referencePolicyLoss(
  inp: PolicyLossInputs,
  cfg: PolicyLossConfig,
  out: GradTarget = {},
): PolicyLossResult {
  const { vocabSize: V, targets } = inp;
  const logits = inp.logits instanceof Uint16Array ? bf16ToFloat32(inp.logits) : inp.logits;
  const T = targets.length;
  const tau = cfg.temperature;
  const stats = rowStats(logits, V, targets, tau, cfg.computeEntropy);
  const tm = tokenMath(cfg, inp, stats.logp, stats.entropy);
  const dlogits = out.inPlace ? (inp.logits as Float32Array) : (out.gradOut ?? new Float32Array(T * V));
  for (let t = 0; t < T; t++) {
    const o = t * V;
    const g = tm.gradLogp[t]! / tau;
    const lz = stats.logZ[t]!;
    const tgt = targets[t]!;
    for (let j = 0; j < V; j++) {
      const p = Math.exp(logits[o + j]! / tau - lz);
      dlogits[o + j] = g * ((j === tgt ? 1 : 0) - p);
    }
  }
  return { loss: tm.loss, dlogits, logprobs: Float32Array.from(stats.logp), metrics: tm.metrics };
}
