import type { FinishReason, Role, ToolCallRecord, Trajectory, Turn } from '@agentrl/protocol';

/**
 * Accumulates a trajectory token by token. Sampled tokens carry their logprob and loss-mask 1;
 * prompt and appended (template, tool-response) tokens carry 0 and 0. Token ids are never
 * re-derived from text, so what the trainer sees is exactly what was sampled.
 */
export class TrajectoryBuilder {
  readonly tokenIds: number[];
  readonly logprobs: number[];
  readonly lossMask: Array<0 | 1>;
  readonly turns: Turn[] = [];
  readonly toolCalls: ToolCallRecord[] = [];
  readonly promptLength: number;

  constructor(
    readonly id: string,
    readonly promptId: string,
    promptIds: readonly number[],
    promptText: string,
  ) {
    this.tokenIds = [...promptIds];
    this.logprobs = promptIds.map(() => 0);
    this.lossMask = promptIds.map(() => 0 as const);
    this.promptLength = promptIds.length;
    this.turns.push({ role: 'user', text: promptText, tokenStart: 0, tokenEnd: promptIds.length });
  }

  get length(): number {
    return this.tokenIds.length;
  }

  /** Appends tokens the engine sampled (trained on). */
  appendSampled(ids: readonly number[], logprobs: readonly number[], text: string): void {
    this.push('assistant', ids, text, logprobs, 1);
  }

  /** Appends tokens the loop wrote (template markup, tool responses): not trained on. */
  appendContext(role: Role, ids: readonly number[], text: string): void {
    this.push(role, ids, text, null, 0);
  }

  finish(
    finishReason: FinishReason,
    extra: Pick<Trajectory, 'policyVersion' | 'engineError'> = {},
  ): Trajectory {
    return {
      ...extra,
      id: this.id,
      promptId: this.promptId,
      tokenIds: this.tokenIds,
      promptLength: this.promptLength,
      logprobs: this.logprobs,
      lossMask: this.lossMask,
      turns: this.turns,
      toolCalls: this.toolCalls,
      finishReason,
      reward: null,
    };
  }

  private push(role: Role, ids: readonly number[], text: string, lps: readonly number[] | null, mask: 0 | 1) {
    const start = this.tokenIds.length;
    for (let i = 0; i < ids.length; i++) {
      this.tokenIds.push(ids[i]!);
      this.logprobs.push(lps ? lps[i]! : 0);
      this.lossMask.push(mask);
    }
    this.turns.push({ role, text, tokenStart: start, tokenEnd: this.tokenIds.length });
  }
}
