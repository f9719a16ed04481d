import {
  type ChatFormat,
  createRollout,
  type EngineAdapter,
  type Rollout,
  type RolloutTokenizer,
  type Scheduler,
  type ToolRegistry,
} from '@agentrl/rollout';
import { createEngineScheduler } from '@agentrl/scheduler';
import type { TrainConfig } from '../config/schema.js';
import type { Environment } from './environment.js';

/** Name of the python tool as the built-in system prompt tells the model to call it. */
export const PYTHON_TOOL_NAME = 'python';

export interface RolloutFactoryOptions {
  engines: EngineAdapter[];
  tokenizer: RolloutTokenizer;
  chatFormat: ChatFormat;
  tools: ToolRegistry;
  maxTurns: number;
  toolResponseMaxChars: number;
}

export interface RolloutSettings {
  maxResponseTokens: number;
  maxTurnTokens: number;
  temperature: number;
  topP: number;
  /** presence / frequency penalties (0: none); the recorded logprobs are the model's, before them */
  presencePenalty?: number;
  frequencyPenalty?: number;
  /** Seed of this batch's sampling; trajectory k of prompt p gets a seed derived from it. */
  seed: number;
}

/**
 * Builds rollouts that share one scheduler, tool registry and chat format. A rollout is cheap, so
 * each step makes its own with that step's seed and response budget: sampling is then a function of
 * (seed, step) and a resumed run samples what the uninterrupted one did.
 */
export async function createRolloutFactory(opts: RolloutFactoryOptions) {
  const scheduler: Scheduler<EngineAdapter> = await createEngineScheduler(opts.engines);
  const { tools, chatFormat } = opts;
  return {
    chatFormat,
    tools,
    make(s: RolloutSettings): Rollout {
      return createRollout({
        scheduler,
        tokenizer: opts.tokenizer,
        tools,
        chatFormat,
        config: {
          maxTurns: opts.maxTurns,
          maxResponseTokens: s.maxResponseTokens,
          toolResponseMaxChars: opts.toolResponseMaxChars,
          sampling: {
            temperature: s.temperature,
            topP: s.topP,
            ...(s.presencePenalty ? { presencePenalty: s.presencePenalty } : {}),
            ...(s.frequencyPenalty ? { frequencyPenalty: s.frequencyPenalty } : {}),
            maxNewTokens: s.maxTurnTokens,
            seed: s.seed,
          },
        },
      });
    },
  };
}
export type RolloutFactory = Awaited<ReturnType<typeof createRolloutFactory>>;

/** The rollout factory of a run: the environment's engines, tokenizer and executor under the config's limits. */
export function createRunRolloutFactory(cfg: TrainConfig, env: Environment) {
  return createRolloutFactory({
    engines: env.engines,
    tokenizer: env.tokenizer,
    chatFormat: env.chatFormat,
    tools: env.tools,
    maxTurns: cfg.rl.maxTurns,
    toolResponseMaxChars: cfg.rl.toolResponseMaxChars,
  });
}
