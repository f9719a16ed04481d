import { countToolErrors, isPositive } from '@agentrl/grpo';
import type { Group, Trajectory } from '@agentrl/protocol';
import type { PolicyStepMetrics } from './policy.js';
import type { RocPhaseOutput } from './roc-phase.js';

export interface RolloutMetricsInput {
  step: number;
  /** The groups as sampled (before engine failures and RoC are taken out). */
  groups: readonly Group[];
  selected: RocPhaseOutput;
  /** Seconds of the rollout phase. */
  tGenerate: number;
  /** Rollouts ran on servers: engine-failure and policy-version metrics are recorded. */
  remote: boolean;
}

/**
 * The rollout side of an RL step's metrics (reward, RoC, lengths, rollout timings, engine
 * failures): what rank 0 sends every rank in the step header under `--engine` with several ranks.
 */
export function rolloutMetrics(input: RolloutMetricsInput): Record<string, number> {
  const { groups, step } = input;
  const { sampled, roc, engineFailed } = input.selected;
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
    tokensPerSec: generated / Math.max(1e-9, input.tGenerate),
    timeGenerate: input.tGenerate,
    timeTool: toolSeconds,
  };
  if (input.remote || engineFailed) {
    metrics.engineFailedTrajectories = engineFailed;
    metrics.policyVersion = step - 1;
    metrics.stalePolicyTrajectories = sampled.filter(
      (t) => t.policyVersion !== undefined && t.policyVersion !== step - 1,
    ).length;
  }
  return metrics;
}

/**
 * The metrics of one RL step, rollout side and update side, in the order metrics.jsonl has them.
 * `updated` is 1 when the policy was updated, 0 when RoC kept nothing to train on: such a step
 * records no lr, loss, gradient or clip figures (none happened), where a 0 would read as measured.
 */
export function stepMetrics(
  rollout: Record<string, number>,
  policy: PolicyStepMetrics | null,
  tTrain: number,
): Record<string, number> {
  const {
    policyVersion,
    engineFailedTrajectories,
    stalePolicyTrajectories,
    tokensPerSec,
    timeGenerate,
    timeTool,
    ...side
  } = rollout;
  const update: Record<string, number> = policy
    ? {
        loss: policy.loss,
        gradNorm: policy.gradNorm,
        clipFracLow: policy.clipFracLow,
        clipFracHigh: policy.clipFracHigh,
        approxKl: policy.approxKl,
        rolloutTrainLogprobMaxAbsDiff: policy.rolloutTrainLogprobMaxAbsDiff,
        trainTokens: policy.trainTokens,
      }
    : { trainTokens: 0 };
  const metrics: Record<string, number> = {
    updated: policy ? 1 : 0,
    ...(policy ? { lr: policy.lr } : {}),
    ...side,
    ...update,
    tokensPerSec: tokensPerSec!,
    timeGenerate: timeGenerate!,
    timeTool: timeTool!,
    timeTrain: tTrain,
  };
  if (policyVersion !== undefined) {
    metrics.engineFailedTrajectories = engineFailedTrajectories!;
    metrics.policyVersion = policyVersion;
    metrics.stalePolicyTrajectories = stalePolicyTrajectories!;
  }
  return metrics;
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
