import { randomBytes } from 'node:crypto';

export interface ParsedToolCalls {
  /** text before the first `<tool_call>`, null when empty (as vLLM returns it) */
  content: string | null;
  toolCalls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
}

const CALL = /<tool_call>(.*?)<\/tool_call>|<tool_call>(.*)/gs;

/** A tool call's id as vLLM makes one (`make_tool_call_id`: `chatcmpl-tool-` and 32 hex digits). */
export function toolCallId(): string {
  return `chatcmpl-tool-${randomBytes(16).toString('hex')}`;
}

/**
 * The Hermes tool-call parser of `vllm serve --tool-call-parser hermes`
 * (`vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py`, non-streaming path): every
 * `<tool_call>{"name": …, "arguments": {…}}</tool_call>` (an unclosed last one too) becomes a tool
 * call with `arguments` re-serialised as a JSON string (as Python's `json.dumps` writes it); the content is the text before the first
 * call. Output that does not parse is returned as plain content with no calls, as vLLM does.
 */
export function parseHermesToolCalls(text: string): ParsedToolCalls {
  if (!text.includes('<tool_call>')) return { content: text, toolCalls: [] };
  try {
    const toolCalls: ParsedToolCalls['toolCalls'] = [];
    for (const m of text.matchAll(CALL)) {
      const raw = (m[1] ?? m[2] ?? '').trim();
      const call = JSON.parse(raw) as { name?: unknown; arguments?: unknown };
      if (typeof call.name !== 'string') throw new Error('no name');
      toolCalls.push({
        id: toolCallId(),
        type: 'function',
        function: { name: call.name, arguments: pythonJsonDumps(call.arguments ?? {}) },
      });
    }
    const content = text.slice(0, text.indexOf('<tool_call>'));
    return { content: content.length > 0 ? content : null, toolCalls };
  } catch {
    return { content: text, toolCalls: [] };
  }
}

/**
 * JSON as Python's `json.dumps(value, ensure_ascii=False)` writes it, which is how vLLM's Hermes
 * parser serialises `arguments`: `", "` between items and `": "` after keys (`{"code": "print(1)"}`).
 * Strings and numbers are JSON.stringify's (a float with no fraction, Python's `1.0`, reads `1`).
 */
export function pythonJsonDumps(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(', ')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${pythonJsonDumps(v)}`)
      .join(', ')}}`;
  return JSON.stringify(value) ?? 'null';
}
