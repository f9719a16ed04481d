import { type RocResult, resampleOnCorrect } from '@agentrl/grpo';
import type { Group, Trajectory } from '@agentrl/protocol';
import { hashSeed } from '@agentrl/protocol';
import type { TrainConfig } from '../config/schema.js';
import type { Problem } from '../task/problem.js';
import { withoutEngineFailures } from './engine-failures.js';
import { rewardModeOf, scoreGroups, type Verify } from './reward.js';

export interface RocPhaseOutput {
  /** Every sampled trajectory, scored (engine failures included). */
  sampled: Trajectory[];
  /** Trajectories the engine failed (left out of the loss). */
  engineFailed: number;
  /** The groups kept for the update, and RoC's metrics. */
  roc: RocResult;
}

/**
 * The reward and RoC phase of an RL step: scores the groups in place, leaves out what the engine
 * broke (counted), and down-samples each group to rl.n with Resample-on-Correct.
 */
export function rocPhase(
  cfg: TrainConfig,
  step: number,
  groups: Group[],
  problems: readonly Problem[],
  verify: Verify,
): RocPhaseOutput {
  const rl = cfg.rl;
  const byId = new Map(problems.map((p) => [p.id, p]));
  scoreGroups(groups, (id) => byId.get(id)!.answer, verify, rewardModeOf(cfg.task));
  const sampled = groups.flatMap((g) => g.trajectories);
  const usable = withoutEngineFailures(groups, { step, maxFailedFraction: cfg.engine.maxFailedFraction });
  const roc = resampleOnCorrect(usable.groups, {
    groupSize: rl.roc ? rl.oversample : rl.n,
    n: rl.n,
    minPositive: Math.min(rl.minPositives, rl.n),
    minNegative: Math.min(rl.minNegatives, Math.max(0, rl.n - rl.minPositives)),
    rejectEqualReward: rl.rejectEqualReward,
    seed: hashSeed(cfg.seed, 'roc', step),
  });
  return { sampled, engineFailed: usable.failed, roc };
}
