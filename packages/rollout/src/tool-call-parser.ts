import type { ToolCall, ToolCallParseFailure } from '@agentrl/protocol';

export const TOOL_CALL_OPEN = '<tool_call>';
export const TOOL_CALL_CLOSE = '</tool_call>';

/** What an assistant turn asked for: nothing, one parsed call, or a call that failed to parse. */
export type ParsedToolCall =
  | { kind: 'none' }
  | { kind: 'call'; call: ToolCall }
  | { kind: 'failure'; failure: ToolCallParseFailure };

/**
 * Finds the first `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` in an assistant turn.
 * Only one call runs per turn (as in rStar2-Agent); text after the first closing tag is ignored.
 * Never throws: a malformed call becomes a failure that is fed back to the model as a tool error.
 * `arguments` may also be a JSON string holding an object (some models emit it that way).
 */
export function parseToolCall(text: string, knownTools?: ReadonlySet<string>): ParsedToolCall {
  const open = text.indexOf(TOOL_CALL_OPEN);
  if (open < 0) return { kind: 'none' };
  const bodyStart = open + TOOL_CALL_OPEN.length;
  const close = text.indexOf(TOOL_CALL_CLOSE, bodyStart);
  if (close < 0) {
    const raw = text.slice(bodyStart);
    return fail('unterminated', raw, `the tool call was not closed with ${TOOL_CALL_CLOSE}`);
  }
  const raw = text.slice(bodyStart, close);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    return fail('invalid_json', raw, `the tool call is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail('not_an_object', raw, 'the tool call must be a JSON object with "name" and "arguments"');
  }
  const obj = value as Record<string, unknown>;
  if (typeof obj.name !== 'string' || obj.name.length === 0) {
    return fail('missing_name', raw, 'the tool call has no "name" string');
  }
  let args: unknown = obj.arguments ?? {};
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      return fail('invalid_arguments', raw, '"arguments" is a string that is not a JSON object');
    }
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return fail('invalid_arguments', raw, '"arguments" must be a JSON object');
  }
  if (knownTools && !knownTools.has(obj.name)) {
    const names = [...knownTools].join(', ');
    return fail('unknown_tool', raw, `unknown tool "${obj.name}"; available: ${names}`);
  }
  return { kind: 'call', call: { name: obj.name, arguments: args as Record<string, unknown> } };
}

function fail(kind: ToolCallParseFailure['kind'], raw: string, message: string): ParsedToolCall {
  return { kind: 'failure', failure: { kind, raw, message } };
}
