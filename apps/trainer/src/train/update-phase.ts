import { computeGroupAdvantages, type MicroBatch, packMicroBatches } from '@agentrl/grpo';
import type { Group } from '@agentrl/protocol';
import type { TrainConfig } from '../config/schema.js';
import type { SharedStep } from './distributed-rollout.js';
import type { PolicyStepMetrics, TrainablePolicy } from './policy.js';

/** Group advantages → packed micro-batches of the groups RoC kept (none when it kept nothing). */
export function packPhase(cfg: TrainConfig, groups: Group[]): MicroBatch[] {
  if (!groups.some((g) => g.trajectories.length > 0)) return [];
  const advantages = computeGroupAdvantages(groups, { normalizeStd: cfg.rl.normalizeStd });
  return packMicroBatches(groups, advantages, { maxTokensPerMicroBatch: cfg.rl.microBatchTokens });
}

/**
 * The update phase of an RL step: one policy update over this rank's share of the micro-batches
 * (all of them in a single process), normalised by the whole step's totals. The policy's weights
 * are the in-process engine's, so its weight sync is the swap itself. Null when RoC kept nothing:
 * no update ran, so there is no loss, learning rate or gradient to report.
 */
export function updatePhase(
  cfg: TrainConfig,
  policy: TrainablePolicy,
  shared: SharedStep,
): PolicyStepMetrics | null {
  const rl = cfg.rl;
  if (shared.header.count === 0) return null;
  return policy.policyStep(
    shared.microBatches,
    {
      clipLow: rl.clipLow,
      clipHigh: rl.clipHigh,
      dualClip: rl.dualClip,
      aggregation: rl.aggregation,
      temperature: rl.temperature,
    },
    shared.header.totals,
  );
}
