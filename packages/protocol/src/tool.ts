import { z } from 'zod';

/** A parsed `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (Hermes/Qwen style). */
export const ToolCallSchema = z
  .object({
    name: z.string().min(1).describe('the tool name, a key of the tool registry'),
    arguments: z.record(z.string(), z.unknown()).describe('the JSON object of arguments'),
  })
  .describe('a tool call the model made');
export type ToolCall = z.infer<typeof ToolCallSchema>;

export const ToolCallParseErrorKindSchema = z
  .enum([
    'invalid_json',
    'not_an_object',
    'missing_name',
    'invalid_arguments',
    'unknown_tool',
    'unterminated',
  ])
  .describe('why the text inside <tool_call> did not become a call');

/** A tool call that failed to parse. It is fed back to the model as a tool error and counts as one. */
export const ToolCallParseFailureSchema = z
  .object({
    kind: ToolCallParseErrorKindSchema,
    raw: z.string().describe('the text between the tags, as the model wrote it'),
    message: z.string().describe('what was wrong, as sent back to the model'),
  })
  .describe('a tool call that could not be parsed');
export type ToolCallParseFailure = z.infer<typeof ToolCallParseFailureSchema>;

/**
 * How a tool call ended. The first six are the executor's statuses; `parse_error` marks a call the
 * model wrote badly and `tool_error` a non-Python tool handler that threw.
 */
export const ToolStatusSchema = z
  .enum([
    'ok',
    'runtime_error',
    'timeout',
    'memory_exceeded',
    'output_truncated',
    'sandbox_error',
    'parse_error',
    'tool_error',
  ])
  .describe('how a tool call ended');
export type ToolStatus = z.infer<typeof ToolStatusSchema>;

export const ToolOutcomeSchema = z
  .object({
    status: ToolStatusSchema,
    stdout: z.string().describe('standard output, possibly truncated in the middle'),
    stderr: z.string().describe('standard error, possibly truncated in the middle'),
    exitCode: z
      .number()
      .int()
      .nullable()
      .describe('process exit code, null when killed by a signal or not run'),
    signal: z.string().nullable().describe('the signal that ended the process, e.g. SIGKILL, or null'),
    wallMs: z.number().nonnegative().describe('wall-clock time of the call in milliseconds'),
    cpuMs: z.number().nonnegative().nullable().describe('CPU time used, when the runner measures it'),
  })
  .describe('the structured result of one tool call');
export type ToolOutcome = z.infer<typeof ToolOutcomeSchema>;

/**
 * Statuses that count as a failed tool call for Resample-on-Correct. `output_truncated` is not a
 * failure: the program ran and exited 0, only its output was too long to return whole.
 */
export const FAILED_TOOL_STATUSES: ReadonlySet<ToolStatus> = new Set<ToolStatus>([
  'runtime_error',
  'timeout',
  'memory_exceeded',
  'sandbox_error',
  'parse_error',
  'tool_error',
]);

/** True when the outcome is a tool error (structured, never by searching the text for "error"). */
export function isToolFailure(outcome: Pick<ToolOutcome, 'status'>): boolean {
  return FAILED_TOOL_STATUSES.has(outcome.status);
}
