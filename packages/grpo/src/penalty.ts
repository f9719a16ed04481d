import { isToolFailure, type ToolCallRecord, type Trajectory } from '@agentrl/protocol';

/** Tool-error ratio of a trace that made no tool call (the reference's neutral value). */
export const NO_TOOL_CALL_ERROR_RATIO = 0.5;

/**
 * True when a recorded tool call failed: it did not parse (the reference, which greps tool
 * responses for "error", misses these), or its structured outcome is a failure status.
 */
export function isFailedToolCall(record: ToolCallRecord): boolean {
  return record.call === null || record.parseFailure !== null || isToolFailure(record.outcome);
}

/** Failed and total tool calls of one trajectory. */
export function countToolErrors(t: Pick<Trajectory, 'toolCalls'>): { failed: number; calls: number } {
  let failed = 0;
  for (const record of t.toolCalls) if (isFailedToolCall(record)) failed++;
  return { failed, calls: t.toolCalls.length };
}

/** failed tool calls / tool calls, or 0.5 when the trace made none. */
export function toolErrorRatio(t: Pick<Trajectory, 'toolCalls'>): number {
  const { failed, calls } = countToolErrors(t);
  return calls === 0 ? NO_TOOL_CALL_ERROR_RATIO : failed / calls;
}

/**
 * Counts complete `\boxed{...}` answers in a text: `\boxed` directly followed by `{` whose braces
 * balance before the text ends. An unclosed `\boxed{` (a truncated answer) does not count.
 */
export function countBoxedAnswers(text: string): number {
  let count = 0;
  let from = 0;
  for (;;) {
    const at = text.indexOf('\\boxed{', from);
    if (at < 0) return count;
    let depth = 0;
    let i = at + 6;
    for (; i < text.length; i++) {
      const ch = text.charCodeAt(i);
      if (ch === 123 /* { */) depth++;
      else if (ch === 125 /* } */ && --depth === 0) break;
    }
    if (i < text.length) {
      count++;
      from = i + 1;
    } else {
      from = at + 7; // unclosed: look for a complete one after its opening brace
    }
  }
}

/**
 * The answer-format penalty from a count of final answers: 1 when there is none, 0 for exactly
 * one, (k - 1) / k for k > 1 (2 answers 0.5, 3 answers 0.67, ...): a missing answer is worse
 * than a repeated one, and more repeats are worse than fewer.
 */
export function formatPenaltyFromCount(k: number): number {
  return k === 0 ? 1 : (k - 1) / k;
}

/** The text of the last assistant turn, or null when the trajectory has none. */
export function finalAssistantText(t: Pick<Trajectory, 'turns'>): string | null {
  for (let i = t.turns.length - 1; i >= 0; i--) {
    const turn = t.turns[i]!;
    if (turn.role === 'assistant') return turn.text;
  }
  return null;
}

/**
 * The answer-format penalty in [0, 1]: `trajectory.formatPenalty` when the scorer set it, else
 * `formatPenaltyFromCount(complete \boxed{...} in the last assistant turn)`; 1 when there is no
 * assistant turn.
 */
export function answerFormatPenalty(t: Pick<Trajectory, 'turns' | 'formatPenalty'>): number {
  if (t.formatPenalty !== undefined) return t.formatPenalty;
  const text = finalAssistantText(t);
  return text === null ? 1 : formatPenaltyFromCount(countBoxedAnswers(text));
}
