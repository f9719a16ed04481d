import type { Group } from '@agentrl/protocol';
import type { GroupAdvantages } from './advantages.js';
import { type PackingConfigInput, PackingConfigSchema, parseConfig } from './config.js';
import { GrpoError, GrpoErrorCode } from './errors.js';
import { checkGroups } from './validate.js';

/**
 * One micro-batch in the packed (varlen, unpadded) form the engine and the policy-loss kernels
 * consume. Sequences lie end to end; sequence s spans tokens [cuSeqlens[s], cuSeqlens[s + 1]).
 * Every per-token array is token-aligned with `tokenIds` exactly as the trajectory stored it:
 * `oldLogprobs[i]` is the sampling logprob of token i (predicted from position i - 1), so the
 * engine shifts its logits by one inside each sequence, never across a boundary.
 */
export interface MicroBatch {
  /** All token ids, concatenated. */
  tokenIds: Int32Array;
  /** S + 1 sequence offsets (flash-attention `cu_seqlens`), from 0 to the token count. */
  cuSeqlens: Int32Array;
  /** 1 on sampled tokens (in the loss), 0 on prompt and tool-response tokens. */
  lossMask: Uint8Array;
  /** Logprob of each token under the sampling policy (0 where the mask is 0). */
  oldLogprobs: Float32Array;
  /** The trajectory's advantage on its loss-masked tokens, 0 elsewhere. */
  advantages: Float32Array;
  /** One advantage per sequence. */
  sequenceAdvantages: Float32Array;
  /** Trajectory id and prompt id of each sequence, in packing order. */
  trajectoryIds: string[];
  promptIds: string[];
  /** Total tokens, loss tokens, and the longest sequence (for varlen attention). */
  numTokens: number;
  numLossTokens: number;
  maxSeqlen: number;
}

interface Unit {
  tokens: number;
  members: [group: number, trajectory: number][];
}

/**
 * Packs trajectories into micro-batches of at most `maxTokensPerMicroBatch` tokens, first-fit by
 * decreasing size (deterministic: ties keep input order), one group per unit when
 * `keepGroupsWhole`. Inside a micro-batch, sequences keep the input order. `advantages[g]` holds
 * group g's per-trajectory advantages (from `computeGroupAdvantages`, or any Float64Array).
 */
export function packMicroBatches(
  groups: readonly Group[],
  advantages: readonly (GroupAdvantages | ArrayLike<number>)[],
  config: PackingConfigInput = {},
): MicroBatch[] {
  const cfg = parseConfig(PackingConfigSchema, config, 'packing');
  checkGroups(groups);
  if (advantages.length !== groups.length)
    throw new GrpoError(
      GrpoErrorCode.INVALID_INPUT,
      `has ${advantages.length} entries for ${groups.length} groups`,
      {
        field: 'advantages',
      },
    );
  const adv = advantages.map((a, g) => {
    const values = 'advantages' in a ? a.advantages : a;
    if (values.length !== groups[g]!.trajectories.length)
      throw new GrpoError(
        GrpoErrorCode.INVALID_INPUT,
        `has ${values.length} values for ${groups[g]!.trajectories.length} trajectories`,
        { field: `advantages[${g}]` },
      );
    return values;
  });

  const units: Unit[] = [];
  const budget = cfg.maxTokensPerMicroBatch;
  groups.forEach((group, g) => {
    const members = group.trajectories.map((t, i): [number, number] => {
      if (t.tokenIds.length > budget)
        throw new GrpoError(
          GrpoErrorCode.OVER_BUDGET,
          `has ${t.tokenIds.length} tokens, over the micro-batch budget of ${budget}: raise maxTokensPerMicroBatch or lower the max response length`,
          { field: `groups[${g}].trajectories[${i}].tokenIds` },
        );
      return [g, i];
    });
    if (cfg.keepGroupsWhole) {
      const tokens = group.trajectories.reduce((n, t) => n + t.tokenIds.length, 0);
      if (tokens > budget)
        throw new GrpoError(
          GrpoErrorCode.OVER_BUDGET,
          `has ${tokens} tokens, over the micro-batch budget of ${budget}: raise maxTokensPerMicroBatch or set keepGroupsWhole: false`,
          { field: `groups[${g}]` },
        );
      units.push({ tokens, members });
    } else {
      for (const m of members)
        units.push({ tokens: group.trajectories[m[1]]!.tokenIds.length, members: [m] });
    }
  });

  // First-fit decreasing; Array.prototype.sort is stable, so equal sizes keep input order.
  const order = Array.from(units.keys()).sort((a, b) => units[b]!.tokens - units[a]!.tokens);
  const bins: { free: number; units: number[] }[] = [];
  for (const u of order) {
    const size = units[u]!.tokens;
    let bin = bins.find((b) => b.free >= size);
    if (!bin) {
      bin = { free: budget, units: [] };
      bins.push(bin);
    }
    bin.free -= size;
    bin.units.push(u);
  }
  return bins.map((bin) => {
    const members = bin.units.sort((a, b) => a - b).flatMap((u) => units[u]!.members);
    return fillMicroBatch(groups, adv, members);
  });
}

function fillMicroBatch(
  groups: readonly Group[],
  adv: readonly ArrayLike<number>[],
  members: readonly [number, number][],
): MicroBatch {
  let numTokens = 0;
  for (const [g, i] of members) numTokens += groups[g]!.trajectories[i]!.tokenIds.length;
  const mb: MicroBatch = {
    tokenIds: new Int32Array(numTokens),
    cuSeqlens: new Int32Array(members.length + 1),
    lossMask: new Uint8Array(numTokens),
    oldLogprobs: new Float32Array(numTokens),
    advantages: new Float32Array(numTokens),
    sequenceAdvantages: new Float32Array(members.length),
    trajectoryIds: [],
    promptIds: [],
    numTokens,
    numLossTokens: 0,
    maxSeqlen: 0,
  };
  let at = 0;
  for (let s = 0; s < members.length; s++) {
    const [g, i] = members[s]!;
    const t = groups[g]!.trajectories[i]!;
    const n = t.tokenIds.length;
    const a = adv[g]![i]!;
    mb.tokenIds.set(t.tokenIds, at);
    mb.oldLogprobs.set(t.logprobs, at);
    mb.numLossTokens += copyMaskAndAdvantage(t.lossMask, a, mb.lossMask, mb.advantages, at);
    mb.sequenceAdvantages[s] = a;
    mb.trajectoryIds.push(t.id);
    mb.promptIds.push(t.promptId);
    mb.maxSeqlen = Math.max(mb.maxSeqlen, n);
    at += n;
    mb.cuSeqlens[s + 1] = at;
  }
  return mb;
}

/**
 * One pass over a trajectory's mask: copies it, writes the advantage on its loss tokens, counts
 * them. The outputs are freshly allocated, so the zeros need no write; a small standalone
 * function so that the JIT optimises the loop on its own.
 */
function copyMaskAndAdvantage(
  mask: ArrayLike<number>,
  advantage: number,
  maskOut: Uint8Array,
  advOut: Float32Array,
  at: number,
): number {
  const n = mask.length;
  let count = 0;
  for (let k = 0; k < n; k++) {
    if (mask[k] === 1) {
      maskOut[at + k] = 1;
      advOut[at + k] = advantage;
      count++;
    }
  }
  return count;
}
