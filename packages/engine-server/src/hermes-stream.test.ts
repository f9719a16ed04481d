import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseHermesToolCalls, pythonJsonDumps } from './hermes.js';
import { createHermesStream, type HermesDelta, type ToolCallDelta } from './hermes-stream.js';
import { createDumpsStream } from './json-dumps-stream.js';

/** `text` in pieces cut at `cuts` (positions taken modulo its length). */
function pieces(text: string, cuts: number[]): string[] {
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  return [0, ...at].map((a, i) => text.slice(a, at[i] ?? text.length)).filter((p) => p.length > 0);
}

/** JSON written with every non-ASCII character and `/` escaped, as some models write it. */
const escaped = (v: unknown) =>
  JSON.stringify(v)
    .replaceAll('/', '\\/')
    .replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
/** Whether JSON.parse would reorder `v`'s keys (integer-like keys go first in JS, not in Python). */
const reorders = (v: unknown): boolean =>
  Array.isArray(v)
    ? v.some(reorders)
    : v !== null && typeof v === 'object'
      ? Object.entries(v).some(([k, x]) => /^(0|[1-9]\d*)$/.test(k) || reorders(x))
      : false;

describe('createDumpsStream (arguments rewritten as json.dumps writes them, as they arrive)', () => {
  it('joins to pythonJsonDumps of the parsed value, however the text is spelt and cut', () => {
    const spell = fc.constantFrom(
      (v: unknown) => JSON.stringify(v),
      (v: unknown) => JSON.stringify(v, null, 2),
      pythonJsonDumps,
      escaped,
    );
    const value = fc
      .dictionary(fc.string({ unit: 'binary' }), fc.jsonValue({ stringUnit: 'binary' }))
      .filter((v) => !reorders(v));
    fc.assert(
      fc.property(value, spell, fc.array(fc.nat(), { maxLength: 12 }), (v, write, cuts) => {
        const text = write(v);
        const stream = createDumpsStream();
        const out = pieces(`${text}}\n</tool_call>`, cuts)
          .map((p) => stream.push(p))
          .join('');
        return stream.done && out === pythonJsonDumps(JSON.parse(text));
      }),
      { numRuns: 500 },
    );
  });

  it('writes a number once it ends, as its value; a surrogate pair once both halves are in', () => {
    const stream = createDumpsStream();
    expect(['{"a": 1.', '0', '0, "b": "\\ud83d', '\\ude00"}'].map((p) => stream.push(p))).toEqual([
      '{"a": ',
      '',
      '1, "b": "',
      '😀"}',
    ]);
  });
});

/** Deltas accumulated as the openai client accumulates them (content joined, calls by index). */
function accumulate(deltas: HermesDelta[]) {
  let content = '';
  const calls: Array<{ id?: string; name: string; arguments: string }> = [];
  for (const d of deltas) {
    content += d.content;
    for (const c of d.toolCalls) {
      calls[c.index] ??= { name: '', arguments: '' };
      const call = calls[c.index]!;
      if (c.id) call.id = c.id;
      call.name += c.function.name ?? '';
      call.arguments += c.function.arguments;
    }
  }
  return { content, calls };
}

function stream(text: string, cuts: number[]) {
  const h = createHermesStream();
  const deltas = pieces(text, cuts).map((p) => h.push(p));
  const parsed = parseHermesToolCalls(text);
  deltas.push(h.end(parsed, text));
  return { deltas, parsed };
}

describe('createHermesStream (vLLM hermes_tool_parser extract_tool_calls_streaming)', () => {
  const TEXT =
    'Let me <b>run</b> it.\n<tool_call>\n{"name": "python", "arguments": {"code": "print(6*7)\\nprint(\\"é\\")", "n": 1.0}}\n</tool_call>\nignored\n<tool_call>{"name":"search","arguments":{"q":"x"}}</tool_call>';

  it('content first, then each call: its name with empty arguments, then argument pieces', () => {
    const { deltas, parsed } = stream(
      TEXT,
      [...TEXT].map((_, i) => i),
    ); // one character at a time
    const calls = deltas.flatMap((d) => d.toolCalls);
    expect(calls[0]).toEqual({
      index: 0,
      id: expect.stringMatching(/^chatcmpl-tool-[0-9a-f]{32}$/),
      type: 'function',
      function: { name: 'python', arguments: '' },
    } satisfies ToolCallDelta);
    const firstArgs = calls.filter((c) => c.index === 0 && c.function.arguments !== '');
    expect(firstArgs.length).toBeGreaterThan(10);
    expect(calls.findIndex((c) => c.index === 1)).toBeGreaterThan(calls.indexOf(firstArgs.at(-1)!));
    const got = accumulate(deltas);
    expect(got.content).toBe(parsed.content);
    expect(got.calls.map(({ name, arguments: a }) => ({ name, arguments: a }))).toEqual(
      parsed.toolCalls.map((c) => c.function),
    );
    // no content leaves once the first call has begun: not even a piece of the marker
    const contentAt = deltas.findLastIndex((d) => d.content !== '');
    expect(contentAt).toBeLessThan(deltas.findIndex((d) => d.toolCalls.length > 0));
  });

  it('joins to the non-streamed reply however the text is cut', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 20 }), (cuts) => {
        const { deltas, parsed } = stream(TEXT, cuts);
        const got = accumulate(deltas);
        return (
          got.content === parsed.content &&
          JSON.stringify(got.calls.map(({ name, arguments: a }) => ({ name, arguments: a }))) ===
            JSON.stringify(parsed.toolCalls.map((c) => c.function))
        );
      }),
    );
  });

  it('a call whose name is not first arrives whole at the end; text that does not parse is content', () => {
    const late = '<tool_call>{"arguments": {"a": 1}, "name": "f"}</tool_call>';
    const { deltas } = stream(late, [5, 20, 30]);
    expect(deltas.slice(0, -1).every((d) => d.toolCalls.length === 0 && d.content === '')).toBe(true);
    expect(deltas.at(-1)!.toolCalls).toEqual([
      { index: 0, id: expect.any(String), type: 'function', function: { name: 'f', arguments: '{"a": 1}' } },
    ]);
    const prose = 'a <tool_c b';
    expect(accumulate(stream(prose, [3, 4, 8]).deltas)).toEqual({ content: prose, calls: [] });
  });
});
