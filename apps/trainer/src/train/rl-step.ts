import { createCommunicator } from '@agentrl/parallel';
import type { Group } from '@agentrl/protocol';
import type { TrainConfig } from '../config/schema.js';
import type { Problem } from '../task/problem.js';
import {
  leadRollsOut,
  type SharedStep,
  type StepHeader,
  shareStep,
  stepTotals,
} from './distributed-rollout.js';
import type { TrainablePolicy } from './policy.js';
import type { Verify } from './reward.js';
import { rocPhase } from './roc-phase.js';
import type { RolloutFactory } from './rollout-factory.js';
import { rolloutPhase } from './rollout-phase.js';
import { rolloutMetrics, stepMetrics } from './step-metrics.js';
import { packPhase, updatePhase } from './update-phase.js';

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
 * down-sampling → packed micro-batches (advantages) → update (one optimizer step) → metrics. With
 * --engine under mpirun, rank 0 alone rolls out and deals the other ranks their micro-batches.
 */
export async function rlStep(input: RlStepInput): Promise<RlStepOutput> {
  const { cfg, step } = input;
  const comm = createCommunicator();
  const leadOnly = leadRollsOut(cfg, comm);
  if (leadOnly && comm.rank !== 0) return trainShare(input, shareStep(comm, undefined));
  const perPrompt = cfg.rl.roc ? cfg.rl.oversample : cfg.rl.n;
  const t0 = performance.now();
  const groups = await rolloutPhase({ ...input, perPrompt, leadOnly });
  const tGenerate = (performance.now() - t0) / 1000;
  const selected = rocPhase(cfg, step, groups, input.problems, input.verify);
  const metrics = rolloutMetrics({ step, groups, selected, tGenerate, remote: !!input.remote });
  const microBatches = packPhase(cfg, selected.roc.groups);
  const header: StepHeader = {
    metrics,
    ...solvedSplit(groups),
    count: microBatches.length,
    totals: stepTotals(microBatches),
  };
  return trainShare(input, leadOnly ? shareStep(comm, { header, microBatches }) : { header, microBatches });
}

/** The update phase on this rank's share, and the step's metrics (rollout side from the header). */
function trainShare(input: RlStepInput, shared: SharedStep): RlStepOutput {
  const t1 = performance.now();
  const policy = updatePhase(input.cfg, input.policy, shared);
  const tTrain = (performance.now() - t1) / 1000;
  const { header } = shared;
  return {
    metrics: stepMetrics(header.metrics, policy, tTrain),
    solvedAll: header.solvedAll,
    notSolvedAll: header.notSolvedAll,
  };
}

/** The step's problems split by whether every sample solved them. */
function solvedSplit(groups: readonly Group[]): { solvedAll: string[]; notSolvedAll: string[] } {
  const solvedAll: string[] = [];
  const notSolvedAll: string[] = [];
  for (const g of groups)
    (g.trajectories.every((t) => t.reward === 1) ? solvedAll : notSolvedAll).push(g.promptId);
  return { solvedAll, notSolvedAll };
}
