import { describe, expect, it } from 'vitest';
import { JsonObjectPrefix } from './json-prefix.js';

/** How many characters of `text` a fresh recogniser accepts, and whether it ended done. */
function read(text: string): { ok: boolean; done: boolean } {
  const p = new JsonObjectPrefix();
  for (const ch of text) if (!p.feed(ch)) return { ok: false, done: p.done };
  return { ok: true, done: p.done };
}

describe('JsonObjectPrefix (the recogniser of forced tool-call arguments)', () => {
  it('accepts every prefix of JSON objects and says when one closed', () => {
    for (const json of [
      '{}',
      '{"code": "print(6*7)"}',
      ' {"a": [1, -2.5e3, true, false, null, {"b": "x\\"y\\u00e9"}], "c": {}}',
    ]) {
      for (let i = 1; i < json.length; i++) expect(read(json.slice(0, i))).toEqual({ ok: true, done: false });
      expect(read(json)).toEqual({ ok: true, done: true });
    }
  });

  it('refuses what no object starts with, and anything after the object closed', () => {
    for (const bad of [
      '[',
      '"x"',
      '{"a" 1',
      '{a',
      '{"a": tru ',
      '{"a": 1,}',
      '{"a": 1}}',
      '{"a": 1} ',
      '{"\\q"',
      '{"a": [1}',
    ])
      expect(read(bad).ok).toBe(false);
  });
});
