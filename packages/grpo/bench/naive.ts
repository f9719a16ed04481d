import type { Group, Trajectory } from '@agentrl/protocol';
import { fnv1a, isToolFailure, Rng } from '@agentrl/protocol';
import { type RocConfig, rocQuotas } from '../src/index.js';

/**
 * The straightforward implementation the benchmark measures against: same decisions and
 * advantages as the package, written the first way that comes to mind. It builds objects per
 * trajectory, scans text with regular expressions, shuffles whole arrays, copies every kept
 * trajectory's token arrays (as the reference's filter_by_mask copies tensors), recomputes the
 * group statistics per trajectory and maps every token through a closure into a new array.
 */
export function naiveRocAndAdvantages(groups: Group[], cfg: RocConfig, eps = 1e-6): Float32Array[] {
  const out: Float32Array[] = [];
  for (const group of groups) {
    const ts = group.trajectories;
    const rewards = ts.map((t) => t.reward as number);
    if (cfg.rejectEqualReward && rewards.every((r) => Math.abs(r - rewards[0]!) <= 1e-8 + 1e-5 * Math.abs(r)))
      continue;
    if (ts.length < cfg.n) continue;
    let kept: Trajectory[];
    if (ts.length === cfg.n) kept = ts;
    else {
      const rng = Rng.seeded(cfg.seed, fnv1a(group.promptId));
      const scored = ts.map((t, index) => {
        const failed = t.toolCalls.filter(
          (c) => c.call === null || c.parseFailure !== null || isToolFailure(c.outcome),
        ).length;
        const tool = t.toolCalls.length === 0 ? 0.5 : failed / t.toolCalls.length;
        const last = [...t.turns].reverse().find((x) => x.role === 'assistant');
        const k = last ? (last.text.match(/\\boxed\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}/g) ?? []).length : 0;
        const format = t.formatPenalty ?? (k === 0 ? 1 : (k - 1) / k);
        return { t, index, positive: (t.reward as number) > 0, penalty: tool + format, key: 0 };
      });
      const pos = scored.filter((s) => s.positive);
      const neg = scored.filter((s) => !s.positive);
      for (const p of pos) p.key = rng.nextU32();
      pos.sort((a, b) => a.penalty - b.penalty || a.key - b.key || a.index - b.index);
      const q = rocQuotas(pos.length, neg.length, cfg.n, cfg.minPositive, cfg.minNegative);
      for (let i = 0; i < neg.length; i++) {
        const j = i + rng.below(neg.length - i);
        [neg[i], neg[j]] = [neg[j]!, neg[i]!];
      }
      kept = [...pos.slice(0, q.positives), ...neg.slice(0, q.negatives)]
        .sort((a, b) => a.index - b.index)
        .map((s) => ({
          ...s.t,
          tokenIds: [...s.t.tokenIds],
          logprobs: [...s.t.logprobs],
          lossMask: [...s.t.lossMask],
        }));
    }
    for (const t of kept) {
      const rs = kept.map((x) => x.reward as number);
      const mean = rs.reduce((a, b) => a + b, 0) / rs.length;
      const std = Math.sqrt(rs.reduce((a, r) => a + (r - mean) ** 2, 0) / (rs.length - 1));
      const adv = ((t.reward as number) - mean) / (std + eps);
      out.push(Float32Array.from(t.lossMask.map((m) => m * adv)));
    }
  }
  return out;
}
