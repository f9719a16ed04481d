import type { ToolOutcome } from '@agentrl/protocol';
import { truncateMiddle } from './truncate.js';

/**
 * The text the model sees for a tool outcome: what the program printed, then its error output,
 * or a one-line reason when it did not finish. Truncated in the middle to `maxChars`.
 */
export function formatToolOutcome(outcome: ToolOutcome, maxChars: number): string {
  const parts: string[] = [];
  if (outcome.stdout.length > 0) parts.push(outcome.stdout.replace(/\n$/, ''));
  switch (outcome.status) {
    case 'timeout':
      parts.push(`Error: the code did not finish within its time limit (${Math.round(outcome.wallMs)} ms).`);
      break;
    case 'memory_exceeded':
      parts.push('Error: the code exceeded its memory limit.');
      break;
    case 'parse_error':
    case 'tool_error':
    case 'sandbox_error':
      parts.push(`Error: ${outcome.stderr}`);
      break;
    default:
      if (outcome.stderr.length > 0) parts.push(outcome.stderr.replace(/\n$/, ''));
  }
  const text = parts.join('\n');
  return truncateMiddle(text.length > 0 ? text : '(no output)', maxChars);
}
