import { hashSeed } from '@agentrl/protocol';
import type { TrainConfig } from '../config/schema.js';
import { type RewardMode, rewardModeOf } from '../train/reward.js';
import type { EvalOptions } from './evaluate.js';

/**
 * The eval settings of a run's config, the one place they are assembled: `agentrl train`'s
 * scheduled evals and `agentrl eval` sample the same way (seed, budgets, system prompt, reward).
 */
export function evalOptionsOf(
  cfg: TrainConfig,
  rewardMode: RewardMode = rewardModeOf(cfg.task),
): EvalOptions {
  return {
    k: cfg.eval.k,
    temperature: cfg.eval.temperature,
    maxResponseTokens: cfg.eval.maxResponseTokens,
    maxTurnTokens: cfg.rl.maxTurnTokens,
    seed: hashSeed(cfg.seed, 'eval'),
    systemPrompt: cfg.task.systemPrompt,
    rewardMode,
  };
}
