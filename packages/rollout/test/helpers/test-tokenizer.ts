import type { RolloutTokenizer } from '../../src/tokenizer.js';

const SPECIALS = [
  '<|im_start|>',
  '<|im_end|>',
  '<tool_call>',
  '</tool_call>',
  '<tool_response>',
  '</tool_response>',
];

/**
 * A small deterministic tokenizer for unit tests of parsing and masking: the chat specials are one
 * token each, every other UTF-16 unit is its own token. It pairs "a" and "b" into one token so
 * that decode/re-encode drift would show (re-encoding "a"+"b" sampled separately gives one id).
 */
export function createTestTokenizer(): RolloutTokenizer {
  return {
    encode(text) {
      const ids: number[] = [];
      let i = 0;
      outer: while (i < text.length) {
        for (let s = 0; s < SPECIALS.length; s++) {
          if (text.startsWith(SPECIALS[s]!, i)) {
            ids.push(s);
            i += SPECIALS[s]!.length;
            continue outer;
          }
        }
        if (text.startsWith('ab', i)) {
          ids.push(SPECIALS.length);
          i += 2;
          continue;
        }
        ids.push(SPECIALS.length + 1 + text.charCodeAt(i));
        i += 1;
      }
      return ids;
    },
    decode(ids) {
      return ids
        .map((id) =>
          id < SPECIALS.length
            ? SPECIALS[id]!
            : id === SPECIALS.length
              ? 'ab'
              : String.fromCharCode(id - SPECIALS.length - 1),
        )
        .join('');
    },
  };
}
