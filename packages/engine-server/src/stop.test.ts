import { describe, expect, it } from 'vitest';
import { sglangFinish, stopCause, vllmFinish } from './stop.js';

const spec = { stopTokenIds: [7], eosIds: [9], stopStrings: ['STOP', 'END'] };

describe('stop handling', () => {
  it('names the cause: a client stop id, EOS, the earliest stop string, else length', () => {
    expect(stopCause([1, 7], 'stop', 'x', spec)).toEqual({ kind: 'token', tokenId: 7 });
    expect(stopCause([1, 9], 'stop', 'x', spec)).toEqual({ kind: 'eos', tokenId: 9 });
    expect(stopCause([1, 2], 'stop', 'a END b STOP', spec)).toEqual({
      kind: 'string',
      text: 'END',
      index: 2,
    });
    expect(stopCause([1, 2], 'length', 'abc', spec)).toEqual({ kind: 'length' });
  });

  it('vLLM: the text ends before the stop string unless include_stop_str_in_output; stop_reason', () => {
    const cause = { kind: 'string', text: 'END', index: 2 } as const;
    expect(vllmFinish(cause, 'a END b', false)).toEqual({
      text: 'a ',
      finish_reason: 'stop',
      stop_reason: 'END',
    });
    expect(vllmFinish(cause, 'a END b', true).text).toBe('a END');
    expect(vllmFinish({ kind: 'eos', tokenId: 9 }, 'a', false).stop_reason).toBeNull();
    expect(vllmFinish({ kind: 'token', tokenId: 7 }, 'a', false).stop_reason).toBe(7);
  });

  it('SGLang: matched is the string or the id, trimmed unless no_stop_trim', () => {
    const cause = { kind: 'string', text: 'END', index: 2 } as const;
    expect(sglangFinish(cause, 'a END b', 'a END', false, 3)).toEqual({
      text: 'a ',
      finish_reason: { type: 'stop', matched: 'END' },
    });
    expect(sglangFinish(cause, 'a END b', 'a END', true, 3).text).toBe('a END b');
    expect(sglangFinish({ kind: 'eos', tokenId: 9 }, 'ab<e>', 'ab', false, 3)).toEqual({
      text: 'ab',
      finish_reason: { type: 'stop', matched: 9 },
    });
    expect(sglangFinish({ kind: 'length' }, 'ab', 'a', false, 3).finish_reason).toEqual({
      type: 'length',
      length: 3,
    });
  });
});
