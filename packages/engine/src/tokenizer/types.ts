/** What every tokenizer of the engine offers: the char tokenizer and Hugging Face tokenizer.json ones. */
export interface Tokenizer {
  readonly vocabSize: number;
  /** id that ends an assistant turn (`<|im_end|>` for ChatML models) */
  readonly eosTokenId: number;
  readonly padTokenId: number | undefined;
  /** special token text -> id (each encodes to exactly one id) */
  readonly specialTokens: ReadonlyMap<string, number>;
  /** Jinja chat template, when the tokenizer has one */
  readonly chatTemplate: string | undefined;
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
  /** id of a token string (special or in the vocabulary), or undefined */
  tokenId(token: string): number | undefined;
}
