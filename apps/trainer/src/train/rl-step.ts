import type { TrainConfig } from '../config/schema.js';
import type { Problem } from '../task/problem.js';
import type { TrainablePolicy } from './policy.js';
import type { Verify } from './reward.js';
import { rocPhase } from './roc-phase.js';
import type { RolloutFactory } from './rollout-factory.js';
import { rolloutPhase } from './rollout-phase.js';
import { stepMetrics } from './step-metrics.js';
import { updatePhase } from './update-phase.js';

export interface RlStepInput {
  cfg: TrainConfig;
  step: number;
  maxResponseTokens: number;
  problems: Problem[];
  factory: RolloutFactory;
  policy: TrainablePolicy;
  verify: Verify;
  /** Rollouts run on servers: engine-failure and policy-version metrics are recorded. */
  remote?: boolean;
}

export interface RlStepOutput {
  metrics: Record<string, number>;
  /** Problems every sample solved in this step (for the hard-problem filter of the last stage). */
  solvedAll: string[];
  /** Problems at least one sample failed. */
  notSolvedAll: string[];
}

/**
 * One GRPO-RoC step, phase by phase: rollout (N per prompt with RoC, n without) → reward and RoC
 * down-sampling → update (group advantages, packed micro-batches, one optimizer step) → metrics.
 */
export async function rlStep(input: RlStepInput): Promise<RlStepOutput> {
  const { cfg, step } = input;
  const perPrompt = cfg.rl.roc ? cfg.rl.oversample : cfg.rl.n;
  const t0 = performance.now();
  const groups = await rolloutPhase({ ...input, perPrompt });
  const tGenerate = (performance.now() - t0) / 1000;
  const selected = rocPhase(cfg, step, groups, input.problems, input.verify);
  const t1 = performance.now();
  const policy = updatePhase(cfg, selected.roc.groups, input.policy);
  const tTrain = (performance.now() - t1) / 1000;
  const metrics = stepMetrics({ step, groups, selected, policy, tGenerate, tTrain, remote: !!input.remote });
  const solvedAll: string[] = [];
  const notSolvedAll: string[] = [];
  for (const g of groups)
    (g.trajectories.every((t) => t.reward === 1) ? solvedAll : notSolvedAll).push(g.promptId);
  return { metrics, solvedAll, notSolvedAll };
}
