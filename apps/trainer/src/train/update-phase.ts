import { computeGroupAdvantages, packMicroBatches } from '@agentrl/grpo';
import type { Group } from '@agentrl/protocol';
import type { TrainConfig } from '../config/schema.js';
import type { PolicyStepMetrics, TrainablePolicy } from './policy.js';

/** What an RL step with nothing to train on reports (every group dropped by RoC). */
const NO_UPDATE: PolicyStepMetrics = {
  loss: 0,
  gradNorm: 0,
  lr: 0,
  clipFracLow: 0,
  clipFracHigh: 0,
  approxKl: 0,
  trainTokens: 0,
  rolloutTrainLogprobMaxAbsDiff: 0,
};

/**
 * The update phase of an RL step: group advantages → packed micro-batches → one policy update
 * (the policy's weights are the in-process engine's, so its weight sync is the swap itself).
 */
export function updatePhase(cfg: TrainConfig, groups: Group[], policy: TrainablePolicy): PolicyStepMetrics {
  const rl = cfg.rl;
  if (!groups.some((g) => g.trajectories.length > 0)) return { ...NO_UPDATE };
  const advantages = computeGroupAdvantages(groups, { normalizeStd: rl.normalizeStd });
  const microBatches = packMicroBatches(groups, advantages, { maxTokensPerMicroBatch: rl.microBatchTokens });
  return policy.policyStep(microBatches, {
    clipLow: rl.clipLow,
    clipHigh: rl.clipHigh,
    dualClip: rl.dualClip,
    aggregation: rl.aggregation,
    temperature: rl.temperature,
  });
}
