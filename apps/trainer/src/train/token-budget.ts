import type { ChatFormat, RolloutTokenizer } from '@agentrl/rollout';
import type { TrainConfig } from '../config/schema.js';
import { TrainerError } from '../errors.js';
import { buildPrompt } from '../task/chat-format.js';
import type { Problem } from '../task/problem.js';

/**
 * Stops before anything runs when a trajectory could not fit one packed micro-batch: the longest
 * rendered prompt plus a stage's `maxResponseTokens` must fit `rl.microBatchTokens` (otherwise
 * packing fails after the step's rollouts). A prompt has at most as many tokens as UTF-8 bytes
 * (byte-level tokenizers), so only prompts whose byte length could overflow are encoded.
 */
export function checkTokenBudget(
  cfg: TrainConfig,
  problems: readonly Problem[],
  tokenizer: Pick<RolloutTokenizer, 'encode'>,
  chat: Pick<ChatFormat, 'renderPrompt'>,
): void {
  const budget = cfg.rl.microBatchTokens;
  const stages = cfg.rl.stages.filter((s) => s.steps > 0);
  if (stages.length === 0) return;
  const stage = stages.reduce((a, b) => (b.maxResponseTokens > a.maxResponseTokens ? b : a));
  const room = budget - stage.maxResponseTokens;
  const stageRef = `rl.stages[${cfg.rl.stages.indexOf(stage)}].maxResponseTokens (${stage.maxResponseTokens}, stage ${stage.name})`;
  if (room <= 0) {
    throw new TrainerError(
      'CONFIG_INVALID',
      `config: rl.microBatchTokens (${budget}) must exceed ${stageRef}: one trajectory is its prompt plus up to that many tokens; raise rl.microBatchTokens or lower maxResponseTokens`,
    );
  }
  const candidates = problems
    .map((p) => ({ p, text: chat.renderPrompt(buildPrompt(p, cfg.task.systemPrompt)) }))
    .filter((c) => Buffer.byteLength(c.text, 'utf8') > room);
  for (const c of candidates) {
    const n = tokenizer.encode(c.text).length;
    if (n > room) {
      throw new TrainerError(
        'CONFIG_INVALID',
        `config: the prompt of problem ${c.p.id} is ${n} tokens, and with ${stageRef} a trajectory can reach ${n + stage.maxResponseTokens} tokens, more than rl.microBatchTokens (${budget}) holds; raise rl.microBatchTokens to at least ${n + stage.maxResponseTokens}, lower maxResponseTokens, or drop the longest prompts`,
      );
    }
  }
}
