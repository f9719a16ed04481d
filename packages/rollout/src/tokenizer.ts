/**
 * The part of a tokenizer the agent loop needs. @agentrl/engine's tokenizers satisfy it. `encode`
 * must not add BOS/EOS on its own: the chat template decides every special token.
 */
export interface RolloutTokenizer {
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
  /** ids that end generation besides the end of turn (generation_config.json `eos_token_id`s) */
  readonly stopTokenIds?: readonly number[];
}

/** The id of `text` when the tokenizer maps it to exactly one token (e.g. `</tool_call>`), else null. */
export function singleTokenId(tokenizer: RolloutTokenizer, text: string): number | null {
  const ids = tokenizer.encode(text);
  return ids.length === 1 ? ids[0]! : null;
}
