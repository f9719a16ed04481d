import type { Group, Trajectory } from '@agentrl/protocol';
import {
  type AdvantageConfig,
  type AdvantageConfigInput,
  AdvantageConfigSchema,
  parseConfig,
} from './config.js';
import { GrpoError, GrpoErrorCode } from './errors.js';
import { checkGroups } from './validate.js';

/** The advantages of one group and the statistics they came from. */
export interface GroupAdvantages {
  promptId: string;
  /** One advantage per trajectory, in the group's order. */
  advantages: Float64Array;
  mean: number;
  /** The std used (0 for a group of one); with `normalizeStd: false` it is reported, not applied. */
  std: number;
}

/**
 * Group-relative advantages of one group's rewards: (r - mean) / (std + eps), or r - mean when
 * `normalizeStd` is false (Dr. GRPO). A group of one gets advantage 0: with no other sample there
 * is no baseline, so it carries no signal (verl instead uses mean 0, std 1 and passes r through).
 * `config` must be parsed already; this is the hot inner function.
 */
export function advantagesFromRewards(
  rewards: ArrayLike<number>,
  config: AdvantageConfig,
  out: Float64Array = new Float64Array(rewards.length),
): { advantages: Float64Array; mean: number; std: number } {
  const n = rewards.length;
  if (n === 0) return { advantages: out, mean: 0, std: 0 };
  let sum = 0;
  for (let i = 0; i < n; i++) sum += rewards[i]!;
  const mean = sum / n;
  let sq = 0;
  for (let i = 0; i < n; i++) {
    const d = rewards[i]! - mean;
    sq += d * d;
  }
  const dof = config.unbiasedStd ? n - 1 : n;
  const std = n === 1 ? 0 : Math.sqrt(sq / dof);
  const scale = config.normalizeStd ? 1 / (std + config.eps) : 1;
  for (let i = 0; i < n; i++) out[i] = n === 1 ? 0 : (rewards[i]! - mean) * scale;
  return { advantages: out, mean, std };
}

/**
 * Advantages of every group of a batch (usually the groups RoC kept). Validates the batch cheaply
 * and names the field of a bad one (`groups[3].trajectories[7].reward is NaN ...`).
 */
export function computeGroupAdvantages(
  groups: readonly Group[],
  config: AdvantageConfigInput = {},
): GroupAdvantages[] {
  const cfg = parseConfig(AdvantageConfigSchema, config, 'advantage');
  checkGroups(groups);
  let largest = 0;
  for (const g of groups) largest = Math.max(largest, g.trajectories.length);
  const rewards = new Float64Array(largest);
  return groups.map((g) => {
    const ts = g.trajectories;
    for (let i = 0; i < ts.length; i++) rewards[i] = ts[i]!.reward as number;
    const r = advantagesFromRewards(rewards.subarray(0, ts.length), cfg);
    return { promptId: g.promptId, ...r };
  });
}

/**
 * The per-token advantages of one trajectory: `advantage` on loss-masked tokens (the sampled
 * ones), 0 on prompt and tool-response tokens. Writes into `out` at `offset` when given, which
 * is how the packer fills a micro-batch without a copy per trajectory.
 */
export function broadcastAdvantage(
  t: Pick<Trajectory, 'lossMask'>,
  advantage: number,
  out: Float32Array = new Float32Array(t.lossMask.length),
  offset = 0,
): Float32Array {
  const mask = t.lossMask;
  const n = mask.length;
  const o = offset === 0 && out.length === n ? out : out.subarray(offset, offset + n);
  for (let i = 0; i < n; i++) o[i] = mask[i] === 1 ? advantage : 0;
  return out;
}

/**
 * The per-token advantages of a packed batch: `sequenceAdvantages[s]` on the loss-masked tokens
 * of sequence s (tokens [cuSeqlens[s], cuSeqlens[s + 1])), 0 elsewhere. `packMicroBatches`
 * already fills `MicroBatch.advantages`; this rebuilds them from the layout alone.
 */
export function broadcastPacked(
  layout: { lossMask: ArrayLike<number>; cuSeqlens: Int32Array },
  sequenceAdvantages: ArrayLike<number>,
): Float32Array {
  const { lossMask: mask, cuSeqlens: cu } = layout;
  if (sequenceAdvantages.length !== cu.length - 1)
    throw new GrpoError(
      GrpoErrorCode.INVALID_INPUT,
      `has ${sequenceAdvantages.length} entries for ${cu.length - 1} sequences`,
      { field: 'sequenceAdvantages' },
    );
  if (cu[cu.length - 1] !== mask.length)
    throw new GrpoError(
      GrpoErrorCode.INVALID_INPUT,
      `ends at ${cu[cu.length - 1]}, the mask has ${mask.length} tokens`,
      {
        field: 'cuSeqlens',
      },
    );
  const out = new Float32Array(mask.length);
  for (let s = 0; s + 1 < cu.length; s++) {
    const a = sequenceAdvantages[s]!;
    for (let i = cu[s]!; i < cu[s + 1]!; i++) out[i] = mask[i] === 1 ? a : 0;
  }
  return out;
}
