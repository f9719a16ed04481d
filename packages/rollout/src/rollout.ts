import type { ChatMessage, Group, Trajectory } from '@agentrl/protocol';
import { type AgentLoopContext, runTrajectory } from './agent-loop.js';
import { type ChatFormat, createChatFormat } from './chat-format.js';
import { type AgentLoopConfigInput, AgentLoopConfigSchema } from './config.js';
import type { EngineAdapter } from './engine-adapter.js';
import type { Scheduler } from './scheduler.js';
import type { RolloutTokenizer } from './tokenizer.js';
import type { ToolRegistry } from './tools.js';

/** One prompt to sample: its id (the group key) and its chat messages. */
export interface RolloutPrompt {
  promptId: string;
  messages: ChatMessage[];
  groundTruth?: string;
}

export interface RolloutOptions {
  scheduler: Scheduler<EngineAdapter>;
  tokenizer: RolloutTokenizer;
  tools: ToolRegistry;
  /** Defaults to ChatML with the registry's tools in the system prompt. */
  chatFormat?: ChatFormat;
  config?: AgentLoopConfigInput;
}

export interface Rollout {
  /**
   * Samples `n` trajectories per prompt, all concurrently: each waits for an engine from the
   * scheduler, keeps it for all its turns, and runs its tool calls while others generate.
   */
  run(
    prompts: readonly RolloutPrompt[],
    n: number,
    options?: { signal?: AbortSignal; policyVersion?: number },
  ): Promise<Group[]>;
}

export function createRollout(options: RolloutOptions): Rollout {
  const config = AgentLoopConfigSchema.parse(options.config ?? {});
  const chatFormat = options.chatFormat ?? createChatFormat({ tools: options.tools.schemas() });
  const ctx: AgentLoopContext = { tokenizer: options.tokenizer, chatFormat, tools: options.tools, config };
  let counter = 0;
  return {
    async run(prompts, n, { signal, policyVersion } = {}) {
      const batch = counter++;
      return Promise.all(
        prompts.map(async (prompt, p) => {
          const promptText = chatFormat.renderPrompt(prompt.messages);
          const promptIds = options.tokenizer.encode(promptText);
          const worstCase = promptIds.length + config.maxResponseTokens;
          const trajectories = await Promise.all(
            Array.from({ length: n }, async (_, k): Promise<Trajectory> => {
              const lease = await options.scheduler.acquire(worstCase, signal);
              try {
                const seed = config.sampling.seed;
                return await runTrajectory(ctx, lease.engine, {
                  id: `${prompt.promptId}/${batch}/${k}`,
                  promptId: prompt.promptId,
                  promptIds,
                  promptText,
                  ...(seed !== undefined ? { seed: seed + (p * n + k) * 1_000_003 } : {}),
                  ...(signal ? { signal } : {}),
                  ...(policyVersion !== undefined ? { policyVersion } : {}),
                });
              } finally {
                lease.release();
              }
            }),
          );
          const group: Group = {
            promptId: prompt.promptId,
            prompt: prompt.messages,
            trajectories,
            ...(prompt.groundTruth !== undefined ? { groundTruth: prompt.groundTruth } : {}),
          };
          return group;
        }),
      );
    },
  };
}
