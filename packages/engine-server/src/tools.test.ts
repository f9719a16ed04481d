import { createCharTokenizer } from '@agentrl/engine';
import { describe, expect, it } from 'vitest';
import type { ServerContext } from './context.js';
import { createTextCodec } from './text.js';
import { normalizeTools, toolCallConstraint } from './tools.js';

const tokenizer = createCharTokenizer();
/** What toolCallConstraint reads of a server: the char tokenizer, its codec, EOS, the vocabulary size. */
const ctx = {
  tokenizer,
  codec: createTextCodec(tokenizer),
  eosIds: [tokenizer.eosTokenId],
  served: { model: { config: { vocab_size: tokenizer.vocabSize } } },
} as unknown as ServerContext;

describe('toolCallConstraint (forced tool calls)', () => {
  const allowed = toolCallConstraint(ctx, [{ name: 'search' }, { name: 'python' }]);
  const call = '<tool_call>\n{"name": "search", "arguments": {"q": "6*7", "k": [1, 2.5]}}\n</tool_call>';
  const ids = tokenizer.encode(call);

  it('allows each token of a whole call in the Hermes frame, then only EOS', () => {
    for (let i = 0; i < ids.length; i++) expect(allowed(ids.slice(0, i))?.has(ids[i]!)).toBe(true);
    expect(allowed(ids)).toEqual(new Set([tokenizer.eosTokenId]));
  });

  it('refuses prose, another name, broken JSON, EOS inside the arguments and text after the object', () => {
    const at = (text: string) => allowed(tokenizer.encode(text))!;
    const id = (ch: string) => tokenizer.encode(ch)[0]!;
    expect(allowed([])?.has(id('T'))).toBe(false);
    expect(at('<tool_call>\n{"name": "').has(id('s'))).toBe(true);
    expect(at('<tool_call>\n{"name": "').has(id('x'))).toBe(false);
    expect(at('<tool_call>\n{"name": "search", "arguments": ').has(id('['))).toBe(false);
    expect(at('<tool_call>\n{"name": "search", "arguments": {"q": "').has(tokenizer.eosTokenId)).toBe(false);
    expect(at('<tool_call>\n{"name": "search", "arguments": {"q": 1,').has(id('}'))).toBe(false);
    expect(at('<tool_call>\n{"name": "search", "arguments": {}').has(id('}'))).toBe(true);
    expect(at('<tool_call>\n{"name": "search", "arguments": {}').has(id(','))).toBe(false);
  });
});

describe('normalizeTools (vLLM ChatCompletionToolsParam.model_dump)', () => {
  it('orders name, description, parameters; missing ones null; extra keys kept after', () => {
    const tools = normalizeTools([
      { type: 'function', function: { parameters: { type: 'object' }, name: 'f', strict: true } },
    ]);
    expect(JSON.stringify(tools)).toBe(
      '{"type":"function","function":{"name":"f","description":null,"parameters":{"type":"object"},"strict":true}}'
        .replace(/^/, '[')
        .concat(']'),
    );
  });
});
