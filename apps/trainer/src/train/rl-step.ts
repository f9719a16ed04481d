import {
  computeGroupAdvantages,
  countToolErrors,
  isPositive,
  packMicroBatches,
  resampleOnCorrect,
} from '@agentrl/grpo';
import { allgatherJson, createCommunicator, shardRange } from '@agentrl/parallel';
import type { Group, Trajectory } from '@agentrl/protocol';
import { hashSeed } from '@agentrl/protocol';
import type { TrainConfig } from '../config/schema.js';
import { buildPrompt } from '../task/chat-format.js';
import type { Problem } from '../task/problem.js';
import { leadRollsOut, type SharedStep, shareStep, stepTotals } from './distributed-rollout.js';
import { withoutEngineFailures } from './engine-failures.js';
import type { TrainablePolicy } from './policy.js';
import { rewardModeOf, scoreGroups, type Verify } from './reward.js';
import type { RolloutFactory } from './rollout-factory.js';

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
 * One GRPO-RoC step: rollouts (N per prompt with RoC, n without) → reward → RoC down-sampling →
 * group advantages → packed micro-batches → one policy update (the policy's weights are the
 * engine's, so the weight sync is the in-process swap) → metrics.
 */
export async function rlStep(input: RlStepInput): Promise<RlStepOutput> {
  const { cfg, step } = input;
  const rl = cfg.rl;
  const perPrompt = rl.roc ? rl.oversample : rl.n;
  const byId = new Map(input.problems.map((p) => [p.id, p]));

  const t0 = performance.now();
  // Under mpirun each rank rolls out a contiguous block of the prompts and the groups are gathered
  // in prompt order, so every rank goes on with the whole batch. Trajectory k of prompt p is seeded
  // seed + (p * perPrompt + k) * 1_000_003 by the rollout: offsetting the seed by the block's start
  // gives every trajectory the seed it has in a single process.
  // With --engine, rank 0 alone rolls the whole step out on the servers and the others train on
  // the micro-batches it deals them (distributed-rollout.ts).
  const comm = createCommunicator();
  const leadOnly = leadRollsOut(cfg, comm);
  if (leadOnly && comm.rank !== 0) return trainShare(input, shareStep(comm, undefined));
  const [start, end] = leadOnly ? [0, input.problems.length] : shardRange(input.problems.length, comm);
  const rollout = input.factory.make({
    maxResponseTokens: input.maxResponseTokens,
    maxTurnTokens: rl.maxTurnTokens,
    temperature: rl.temperature,
    topP: rl.topP,
    seed: hashSeed(cfg.seed, 'rollout', step) + start * perPrompt * 1_000_003,
  });
  const mine = await rollout.run(
    input.problems.slice(start, end).map((p) => ({
      promptId: p.id,
      messages: buildPrompt(p, cfg.task.systemPrompt),
      groundTruth: p.answer,
    })),
    perPrompt,
    // The weights that sample this step are the result of step - 1 updates.
    { policyVersion: step - 1 },
  );
  const groups = comm.size > 1 && !leadOnly ? allgatherJson(comm, mine).flat() : mine;
  const tGenerate = (performance.now() - t0) / 1000;
  scoreGroups(groups, (id) => byId.get(id)!.answer, input.verify, rewardModeOf(cfg.task));
  const sampled = groups.flatMap((g) => g.trajectories);
  // What the engine broke is left out of the loss, and counted.
  const usable = withoutEngineFailures(groups, { step, maxFailedFraction: cfg.engine.maxFailedFraction });

  const roc = resampleOnCorrect(usable.groups, {
    groupSize: perPrompt,
    n: rl.n,
    minPositive: Math.min(rl.minPositives, rl.n),
    minNegative: Math.min(rl.minNegatives, Math.max(0, rl.n - rl.minPositives)),
    rejectEqualReward: rl.rejectEqualReward,
    seed: hashSeed(cfg.seed, 'roc', step),
  });
  const kept = roc.groups.flatMap((g) => g.trajectories);

  const generated = sampled.reduce((s, t) => s + t.lossMask.reduce<number>((a, b) => a + b, 0), 0);
  const toolSeconds =
    sampled.reduce((s, t) => s + t.toolCalls.reduce((a, c) => a + c.outcome.wallMs, 0), 0) / 1000;
  const metrics: Record<string, number> = {
    reward: mean(sampled.map((t) => t.reward ?? 0)),
    accuracy: mean(groups.map((g) => mean(g.trajectories.map((t) => t.reward ?? 0)))),
    posToolErrorBefore: positiveToolErrorRatio(sampled),
    posToolErrorAfter: positiveToolErrorRatio(kept),
    rocPosToolErrorBefore: roc.metrics.positiveToolErrorRatioBefore,
    rocPosToolErrorAfter: roc.metrics.positiveToolErrorRatioAfter,
    toolErrorRatio: roc.metrics.toolErrorRatioAll,
    responseLength: mean(sampled.map(responseLength)),
    responseLengthKept: mean(kept.map(responseLength)),
    responseLengthPositive: mean(sampled.filter(isPositive).map(responseLength)),
    toolCallsPerTrajectory: mean(sampled.map((t) => t.toolCalls.length)),
    groupsKept: roc.groups.length,
    trajectoriesKept: kept.length,
    tokensPerSec: generated / Math.max(1e-9, tGenerate),
    timeGenerate: tGenerate,
    timeTool: toolSeconds,
  };
  if (input.remote || usable.failed) {
    metrics.engineFailedTrajectories = usable.failed;
    metrics.policyVersion = step - 1;
    metrics.stalePolicyTrajectories = sampled.filter(
      (t) => t.policyVersion !== undefined && t.policyVersion !== step - 1,
    ).length;
  }
  const solvedAll: string[] = [];
  const notSolvedAll: string[] = [];
  for (const g of groups)
    (g.trajectories.every((t) => t.reward === 1) ? solvedAll : notSolvedAll).push(g.promptId);

  const microBatches =
    kept.length > 0
      ? packMicroBatches(roc.groups, computeGroupAdvantages(roc.groups, { normalizeStd: rl.normalizeStd }), {
          maxTokensPerMicroBatch: rl.microBatchTokens,
        })
      : [];
  const header = {
    metrics,
    solvedAll,
    notSolvedAll,
    count: microBatches.length,
    totals: stepTotals(microBatches),
  };
  return trainShare(input, leadOnly ? shareStep(comm, { header, microBatches }) : { header, microBatches });
}

/**
 * The update of a step whose rollouts are done: this rank's share of the micro-batches (all of them
 * in a single process), one optimizer step, and the step's metrics (rollout side from the header).
 */
function trainShare(input: RlStepInput, { header, microBatches }: SharedStep): RlStepOutput {
  const rl = input.cfg.rl;
  const t1 = performance.now();
  let policy = {
    loss: 0,
    gradNorm: 0,
    lr: 0,
    clipFracLow: 0,
    clipFracHigh: 0,
    approxKl: 0,
    trainTokens: 0,
    rolloutTrainLogprobMaxAbsDiff: 0,
  };
  if (header.count > 0) {
    policy = input.policy.policyStep(
      microBatches,
      {
        clipLow: rl.clipLow,
        clipHigh: rl.clipHigh,
        dualClip: rl.dualClip,
        aggregation: rl.aggregation,
        temperature: rl.temperature,
      },
      header.totals,
    );
  }
  const tTrain = (performance.now() - t1) / 1000;
  const {
    policyVersion,
    engineFailedTrajectories,
    stalePolicyTrajectories,
    tokensPerSec,
    timeGenerate,
    timeTool,
    ...rollout
  } = header.metrics;
  const metrics: Record<string, number> = {
    lr: policy.lr,
    ...rollout,
    loss: policy.loss,
    gradNorm: policy.gradNorm,
    clipFracLow: policy.clipFracLow,
    clipFracHigh: policy.clipFracHigh,
    approxKl: policy.approxKl,
    rolloutTrainLogprobMaxAbsDiff: policy.rolloutTrainLogprobMaxAbsDiff,
    trainTokens: policy.trainTokens,
    tokensPerSec: tokensPerSec as number,
    timeGenerate: timeGenerate as number,
    timeTool: timeTool as number,
    timeTrain: tTrain,
  };
  if (policyVersion !== undefined) {
    metrics.engineFailedTrajectories = engineFailedTrajectories as number;
    metrics.policyVersion = policyVersion;
    metrics.stalePolicyTrajectories = stalePolicyTrajectories as number;
  }
  return { metrics, solvedAll: header.solvedAll, notSolvedAll: header.notSolvedAll };
}

function responseLength(t: Trajectory): number {
  return t.tokenIds.length - t.promptLength;
}

/** Failed tool calls / tool calls pooled over the positive trajectories (0 when they made no call). */
export function positiveToolErrorRatio(ts: readonly Trajectory[]): number {
  let failed = 0;
  let calls = 0;
  for (const t of ts) {
    if (!isPositive(t)) continue;
    const c = countToolErrors(t);
    failed += c.failed;
    calls += c.calls;
  }
  return calls === 0 ? 0 : failed / calls;
}

export function mean(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
}

export type { Group };
