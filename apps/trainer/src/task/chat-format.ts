import type { ChatMessage } from '@agentrl/protocol';
import type { Problem } from './problem.js';

/**
 * The built-in system message: a ChatML system turn that describes the python tool in the
 * Hermes/Qwen call format of rStar2-Agent. Kept short because a char-level model pays for every
 * character of it in every rollout.
 */
export const DEFAULT_SYSTEM_PROMPT =
  'Tool: <tool_call>{"name": "python", "arguments": {"code": "..."}}</tool_call> runs Python and returns ' +
  'what it printed. Put the final answer in \\boxed{}.';

/** The chat prompt of one problem. */
export function buildPrompt(problem: Problem, systemPrompt: string | null): ChatMessage[] {
  return [
    { role: 'system', content: systemPrompt ?? DEFAULT_SYSTEM_PROMPT },
    { role: 'user', content: problem.question },
  ];
}

/** The exact text of a python tool call. */
export function toolCallText(code: string): string {
  return `<tool_call>${JSON.stringify({ name: 'python', arguments: { code } })}</tool_call>`;
}
