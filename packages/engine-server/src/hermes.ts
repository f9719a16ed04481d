import { randomBytes } from 'node:crypto';

export interface ParsedToolCalls {
  /** text before the first `<tool_call>`, null when empty (as vLLM returns it) */
  content: string | null;
  toolCalls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
}

const CALL = /<tool_call>(.*?)<\/tool_call>|<tool_call>(.*)/gs;

/**
 * The Hermes tool-call parser of `vllm serve --tool-call-parser hermes`
 * (`vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py`, non-streaming path): every
 * `<tool_call>{"name": …, "arguments": {…}}</tool_call>` (an unclosed last one too) becomes a tool
 * call with `arguments` re-serialised as a JSON string; the content is the text before the first
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
        id: `chatcmpl-tool-${randomBytes(16).toString('hex')}`,
        type: 'function',
        function: { name: call.name, arguments: JSON.stringify(call.arguments ?? {}) },
      });
    }
    const content = text.slice(0, text.indexOf('<tool_call>'));
    return { content: content.length > 0 ? content : null, toolCalls };
  } catch {
    return { content: text, toolCalls: [] };
  }
}
