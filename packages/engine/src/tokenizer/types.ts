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
  /**
   * Named chat templates (tokenizer_config.json's list form, e.g. `default` and `tool_use`); the
   * `chatTemplate` above is the `default` one.
   */
  readonly chatTemplates?: Readonly<Record<string, string>>;
  /** Token strings the chat template sees as `bos_token`, `eos_token`, … (absent ones are undefined). */
  readonly bosToken?: string | undefined;
  readonly eosToken?: string | undefined;
  readonly padToken?: string | undefined;
  readonly unkToken?: string | undefined;
  /**
   * Every id that ends generation: `eosTokenId` plus generation_config.json's `eos_token_id`
   * (Qwen3 ends on `<|im_end|>` and `<|endoftext|>`).
   */
  readonly stopTokenIds?: readonly number[];
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
  /** id of a token string (special or in the vocabulary), or undefined */
  tokenId(token: string): number | undefined;
}
