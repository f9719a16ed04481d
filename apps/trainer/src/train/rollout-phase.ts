import { allgatherJson, createCommunicator, shardRange } from '@agentrl/parallel';
import type { Group } from '@agentrl/protocol';
import { hashSeed } from '@agentrl/protocol';
import type { TrainConfig } from '../config/schema.js';
import { buildPrompt } from '../task/chat-format.js';
import type { Problem } from '../task/problem.js';
import type { RolloutFactory } from './rollout-factory.js';

export interface RolloutPhaseInput {
  cfg: TrainConfig;
  step: number;
  maxResponseTokens: number;
  problems: readonly Problem[];
  factory: RolloutFactory;
  /** Trajectories sampled per prompt (rl.oversample with RoC, rl.n without). */
  perPrompt: number;
  /** `--engine` under mpirun: this rank (0) rolls out every prompt on the servers (distributed-rollout.ts). */
  leadOnly: boolean;
}

/**
 * The rollout phase of an RL step: `perPrompt` trajectories for every prompt, in prompt order.
 * Under mpirun each rank rolls out a contiguous block of the prompts and the groups are gathered
 * in prompt order, so every rank goes on with the whole batch. Trajectory k of prompt p is seeded
 * seed + (p * perPrompt + k) * 1_000_003 by the rollout: offsetting the seed by the block's start
 * gives every trajectory the seed it has in a single process. With `leadOnly` (--engine), rank 0
 * alone rolls the whole step out; the other ranks never get here and train on what it deals them.
 */
export async function rolloutPhase(input: RolloutPhaseInput): Promise<Group[]> {
  const { cfg, step, perPrompt } = input;
  const rl = cfg.rl;
  const comm = createCommunicator();
  const all = input.problems.length;
  const [start, end] = input.leadOnly ? [0, all] : shardRange(all, comm);
  const rollout = input.factory.make({
    maxResponseTokens: input.maxResponseTokens,
    maxTurnTokens: rl.maxTurnTokens,
    temperature: rl.temperature,
    topP: rl.topP,
    presencePenalty: rl.presencePenalty,
    frequencyPenalty: rl.frequencyPenalty,
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
  return comm.size > 1 && !input.leadOnly ? allgatherJson(comm, mine).flat() : mine;
}
