import type { Group } from '@agentrl/protocol';
import { buildPrompt } from '../task/chat-format.js';
import type { Problem } from '../task/problem.js';
import { type RewardMode, scoreGroups, type Verify } from '../train/reward.js';
import type { RolloutFactory } from '../train/rollout-factory.js';

export interface EvalOptions {
  k: number;
  temperature: number;
  maxResponseTokens: number;
  maxTurnTokens: number;
  seed: number;
  systemPrompt: string | null;
  /** How answers are read (see task.reward). */
  rewardMode: RewardMode;
  /** Problems per rollout batch (bounds memory of the KV caches). */
  batchSize?: number;
}

export interface EvalResult {
  problems: number;
  k: number;
  /** pass@1 averaged over k samples per problem (avg@k, as reported for AIME). */
  accuracy: number;
  /** share of problems with at least one correct sample among k. */
  passAtK: number;
  toolCallsPerTrajectory: number;
  toolUseRate: number;
  responseLength: number;
  perProblem: { id: string; correct: number }[];
}

/** avg@k pass@1 of the policy behind `factory` on `problems`. */
export async function evaluate(
  factory: RolloutFactory,
  problems: readonly Problem[],
  verify: Verify,
  opts: EvalOptions,
): Promise<EvalResult> {
  const byId = new Map(problems.map((p) => [p.id, p]));
  const batch = opts.batchSize ?? 64;
  const groups: Group[] = [];
  for (let i = 0; i < problems.length; i += batch) {
    const slice = problems.slice(i, i + batch);
    const rollout = factory.make({
      maxResponseTokens: opts.maxResponseTokens,
      maxTurnTokens: opts.maxTurnTokens,
      temperature: opts.temperature,
      topP: 1,
      seed: opts.seed + i,
    });
    const got = await rollout.run(
      slice.map((p) => ({
        promptId: p.id,
        messages: buildPrompt(p, opts.systemPrompt),
        groundTruth: p.answer,
      })),
      opts.k,
    );
    scoreGroups(got, (id) => byId.get(id)!.answer, verify, opts.rewardMode);
    groups.push(...got);
  }
  const trajectories = groups.flatMap((g) => g.trajectories);
  const n = Math.max(1, trajectories.length);
  const perProblem = groups.map((g) => ({
    id: g.promptId,
    correct: g.trajectories.filter((t) => t.reward === 1).length,
  }));
  return {
    problems: groups.length,
    k: opts.k,
    accuracy: perProblem.reduce((s, p) => s + p.correct / opts.k, 0) / Math.max(1, groups.length),
    passAtK: perProblem.filter((p) => p.correct > 0).length / Math.max(1, groups.length),
    toolCallsPerTrajectory: trajectories.reduce((s, t) => s + t.toolCalls.length, 0) / n,
    toolUseRate: trajectories.filter((t) => t.toolCalls.length > 0).length / n,
    responseLength: trajectories.reduce((s, t) => s + t.tokenIds.length - t.promptLength, 0) / n,
    perProblem,
  };
}
