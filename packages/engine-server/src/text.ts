import type { Tokenizer } from '@agentrl/engine';

/**
 * The ids `skip_special_tokens` leaves out of text: the tokenizer's special tokens (for an HF
 * tokenizer exactly the added tokens marked special, so Qwen's `<tool_call>` and `<think>` stay);
 * for the char tokenizer, whose nine tokens are all "special", only the `<|…|>` control tokens.
 */
export function skippableIds(tokenizer: Tokenizer): ReadonlySet<number> {
  const hf = 'addedTokens' in tokenizer;
  return new Set(
    [...tokenizer.specialTokens].filter(([text]) => hf || /^<\|.*\|>$/.test(text)).map(([, id]) => id),
  );
}

export interface TextCodec {
  decode(ids: readonly number[], skipSpecial: boolean): string;
  /** one token's text, as vLLM's `tokens` / `top_logprobs` keys show it */
  piece(id: number): string;
  /** vLLM's `return_tokens_as_token_ids` spelling */
  asTokenId(id: number): string;
}

export function createTextCodec(tokenizer: Tokenizer): TextCodec {
  const skip = skippableIds(tokenizer);
  return {
    decode: (ids, skipSpecial) => tokenizer.decode(skipSpecial ? ids.filter((i) => !skip.has(i)) : ids),
    piece: (id) => tokenizer.decode([id]),
    asTokenId: (id) => `token_id:${id}`,
  };
}
