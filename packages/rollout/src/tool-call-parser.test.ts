import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseToolCall } from './tool-call-parser.js';

const tools = new Set(['python']);

describe('parseToolCall', () => {
  it('finds no call in plain text', () => {
    expect(parseToolCall('The answer is \\boxed{4}.<|im_end|>')).toEqual({ kind: 'none' });
  });

  it('parses a Hermes-style call with surrounding text', () => {
    const text =
      'Let me compute.\n<tool_call>\n{"name": "python", "arguments": {"code": "print(1+1)"}}\n</tool_call>';
    expect(parseToolCall(text, tools)).toEqual({
      kind: 'call',
      call: { name: 'python', arguments: { code: 'print(1+1)' } },
    });
  });

  it('accepts arguments given as a JSON string', () => {
    const r = parseToolCall(
      '<tool_call>{"name":"python","arguments":"{\\"code\\":\\"x\\"}"}</tool_call>',
      tools,
    );
    expect(r).toEqual({ kind: 'call', call: { name: 'python', arguments: { code: 'x' } } });
  });

  it.each([
    ['<tool_call>{"name": "python", "arguments": {"code": "x"}', 'unterminated'],
    ['<tool_call>{"name": python}</tool_call>', 'invalid_json'],
    ['<tool_call>[1,2]</tool_call>', 'not_an_object'],
    ['<tool_call>{"arguments": {}}</tool_call>', 'missing_name'],
    ['<tool_call>{"name": "python", "arguments": [1]}</tool_call>', 'invalid_arguments'],
    ['<tool_call>{"name": "bash", "arguments": {}}</tool_call>', 'unknown_tool'],
  ])('reports %s as %s, keeping the raw text', (text, kind) => {
    const r = parseToolCall(text, tools);
    expect(r.kind).toBe('failure');
    if (r.kind === 'failure') {
      expect(r.failure.kind).toBe(kind);
      expect(text).toContain(r.failure.raw);
      expect(r.failure.message.length).toBeGreaterThan(0);
    }
  });

  it('never throws and round-trips any JSON-serialisable arguments', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        parseToolCall(`<tool_call>${s}</tool_call>`);
      }),
    );
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (args) => {
        const text = `<tool_call>${JSON.stringify({ name: 'python', arguments: args })}</tool_call>`;
        const r = parseToolCall(text, tools);
        expect(r.kind).toBe('call');
        if (r.kind === 'call') expect(r.call.arguments).toEqual(JSON.parse(JSON.stringify(args)));
      }),
    );
  });
});
