import type { PolicyLossConfig } from '../config.js';

/** Which clip, if any, is active for a token (0 none, 1 low, 2 high, 3 dual). */
export const Clip = { None: 0, Low: 1, High: 2, Dual: 3 } as const;

export interface SurrogateValue {
  loss: number;
  /** d loss / d ratio: 0 where a clip is active. */
  dRatio: number;
  clip: number;
}

/**
 * The clipped surrogate of one token with the dual clip, exactly verl's `compute_policy_loss`:
 * max(-A r, -A clip(r, 1 - lo, 1 + hi)), then for A < 0 also min(that, -A c).
 */
export function surrogate(ratio: number, adv: number, cfg: PolicyLossConfig): SurrogateValue {
  if (adv > 0) {
    const hi = 1 + cfg.clipHigh;
    if (ratio > hi) return { loss: -adv * hi, dRatio: 0, clip: Clip.High };
    return { loss: -adv * ratio, dRatio: -adv, clip: Clip.None };
  }
  if (adv < 0) {
    if (cfg.dualClip !== null && ratio > cfg.dualClip)
      return { loss: -adv * cfg.dualClip, dRatio: 0, clip: Clip.Dual };
    const lo = 1 - cfg.clipLow;
    if (ratio < lo) return { loss: -adv * lo, dRatio: 0, clip: Clip.Low };
    return { loss: -adv * ratio, dRatio: -adv, clip: Clip.None };
  }
  return { loss: 0, dRatio: 0, clip: Clip.None };
}
