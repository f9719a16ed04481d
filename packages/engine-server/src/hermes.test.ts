import { describe, expect, it } from 'vitest';
import { parseHermesToolCalls, pythonJsonDumps } from './hermes.js';

describe('parseHermesToolCalls (vllm serve --tool-call-parser hermes)', () => {
  it('splits content from calls and re-serialises arguments as a JSON string', () => {
    const r = parseHermesToolCalls(
      'Let me run it.\n<tool_call>\n{"name": "python", "arguments": {"code": "print(1)"}}\n</tool_call>\n<tool_call>{"name": "python", "arguments": {"code": "print(2)"}}',
    );
    expect(r.content).toBe('Let me run it.\n');
    expect(r.toolCalls.map((c) => [c.type, c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['function', 'python', { code: 'print(1)' }],
      ['function', 'python', { code: 'print(2)' }],
    ]);
    expect(r.toolCalls[0]!.id).toMatch(/^chatcmpl-tool-[0-9a-f]{32}$/);
    // vLLM: json.dumps(arguments, ensure_ascii=False), Python's separators
    expect(r.toolCalls[0]!.function.arguments).toBe('{"code": "print(1)"}');
  });

  it("writes arguments with Python json.dumps' separators, nested, non-ASCII kept", () => {
    expect(pythonJsonDumps({ a: [1, 2, { b: null }], c: 'é"\n', d: true, e: {} })).toBe(
      '{"a": [1, 2, {"b": null}], "c": "é\\"\\n", "d": true, "e": {}}',
    );
  });

  it('gives null content when the turn is only a call, and plain content when nothing parses', () => {
    expect(parseHermesToolCalls('<tool_call>{"name":"f","arguments":{}}</tool_call>').content).toBeNull();
    expect(parseHermesToolCalls('<tool_call>{not json}</tool_call>')).toEqual({
      content: '<tool_call>{not json}</tool_call>',
      toolCalls: [],
    });
    expect(parseHermesToolCalls('no call')).toEqual({ content: 'no call', toolCalls: [] });
  });
});
