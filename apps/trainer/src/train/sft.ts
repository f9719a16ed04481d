import { Rng } from '@agentrl/protocol';
import type { ChatFormat, RolloutTokenizer } from '@agentrl/rollout';
import type { TrainConfig } from '../config/schema.js';
import type { SftDemo } from '../task/sft-data.js';
import type { MaskedSequence, TrainablePolicy } from './policy.js';

/**
 * Tokenizes a demonstration exactly as the agent loop lays out a trajectory: the rendered prompt,
 * each assistant turn as sampled (loss on), each tool response as the segment the loop appends
 * (loss off), and the end-of-turn token after the final answer (loss on: the model must learn to stop).
 */
export function tokenizeDemo(
  demo: SftDemo,
  chat: ChatFormat,
  tokenizer: RolloutTokenizer,
  opts: { maskDirectAnswer?: boolean } = {},
): MaskedSequence {
  const firstReply = demo.messages.findIndex((m) => m.role === 'assistant');
  const promptEnd = firstReply < 0 ? demo.messages.length : firstReply;
  const tokenIds = tokenizer.encode(chat.renderPrompt(demo.messages.slice(0, promptEnd)));
  const lossMask: (0 | 1)[] = tokenIds.map(() => 0);
  const push = (text: string, loss: 0 | 1) => {
    const ids = tokenizer.encode(text);
    tokenIds.push(...ids);
    for (let i = 0; i < ids.length; i++) lossMask.push(loss);
  };
  const rest = demo.messages.slice(promptEnd);
  for (let i = 0; i < rest.length; i++) {
    const m = rest[i]!;
    if (m.role !== 'assistant') continue;
    const next = rest[i + 1];
    if (next?.role === 'user') {
      push(m.content, 1);
      push(chat.toolResponseSegment(m.content, next.content), 0);
    } else if (opts.maskDirectAnswer && demo.directAnswer && m.content.includes(demo.directAnswer)) {
      // Format only: learn `\boxed{` ... `}` and stopping, not digits no small model can compute.
      const at = m.content.lastIndexOf(demo.directAnswer);
      push(m.content.slice(0, at), 1);
      push(demo.directAnswer, 0);
      push(m.content.slice(at + demo.directAnswer.length) + chat.endOfTurn, 1);
    } else {
      push(m.content + chat.endOfTurn, 1);
    }
  }
  return { tokenIds, lossMask };
}

/**
 * Runs SFT optimizer steps `firstStep`..`cfg.sft.steps` on random batches of the demonstrations
 * (seeded per step, so a resumed run draws the batches the uninterrupted one would have).
 */
export async function runSft(opts: {
  cfg: TrainConfig;
  sequences: readonly MaskedSequence[];
  policy: TrainablePolicy;
  firstStep?: number;
  onStep: (
    step: number,
    m: { loss: number; gradNorm: number; lr: number; tokens: number; seconds: number },
  ) => void | Promise<void>;
}): Promise<void> {
  const { cfg, sequences, policy } = opts;
  const sft = cfg.sft;
  for (let step = opts.firstStep ?? 1; step <= sft.steps; step++) {
    const rng = Rng.derive(cfg.seed, 'sft-batch', step);
    const batch = Array.from({ length: sft.batchSize }, () => sequences[rng.int(0, sequences.length - 1)]!);
    const t0 = performance.now();
    const r = policy.sftStep(batch);
    await opts.onStep(step, { ...r, seconds: (performance.now() - t0) / 1000 });
    // Yield so the progress bar and signals get a turn between CPU-bound steps.
    await new Promise((resolve) => setImmediate(resolve));
  }
}
