import { TokenizerLoader } from '@lenml/tokenizers';
import { EngineError } from '../errors.js';
import type { Tokenizer } from './types.js';

type PreTrained = ReturnType<typeof TokenizerLoader.fromPreTrained>;

/** What tokenizer_config.json (and its sibling files) say beyond tokenizer.json. */
export interface HfTokenizerMeta {
  /** the `default` chat template */
  chatTemplate?: string | undefined;
  /** every named template (list form of `chat_template`) */
  chatTemplates?: Readonly<Record<string, string>>;
  bosToken?: string | undefined;
  eosToken?: string | undefined;
  padToken?: string | undefined;
  unkToken?: string | undefined;
  /** generation_config.json `eos_token_id` (one id or a list) */
  generationEosIds?: readonly number[];
  /** where the files came from, for error messages */
  source?: string;
}

/**
 * A Hugging Face `tokenizer.json` tokenizer, run by @lenml/tokenizers (a dependency-free port of
 * transformers.js tokenizers): BPE / Unigram / WordPiece with the file's normalizer, pre-tokenizer,
 * added tokens and decoder, so ids match the Python `tokenizers` library.
 */
export class HfTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly eosTokenId: number;
  readonly padTokenId: number | undefined;
  readonly specialTokens: ReadonlyMap<string, number>;
  readonly chatTemplate: string | undefined;
  readonly chatTemplates: Readonly<Record<string, string>>;
  readonly bosToken: string | undefined;
  readonly eosToken: string | undefined;
  readonly padToken: string | undefined;
  readonly unkToken: string | undefined;
  readonly stopTokenIds: readonly number[];
  /** every added token (special or not: Qwen's `<tool_call>` and `<think>` are added, not special) */
  readonly addedTokens: ReadonlyMap<string, number>;

  constructor(
    private readonly inner: PreTrained,
    meta: HfTokenizerMeta = {},
  ) {
    const source = meta.source ?? 'tokenizer.json';
    const added = inner.added_tokens;
    this.addedTokens = new Map(added.map((t) => [t.content, t.id]));
    this.specialTokens = new Map(added.filter((t) => t.special).map((t) => [t.content, t.id]));
    const maxAdded = added.reduce((m, t) => Math.max(m, t.id), -1);
    this.vocabSize = Math.max(inner.model.vocab.length, maxAdded + 1);
    const idOf = (token: string | undefined, field: string): number | undefined => {
      if (token === undefined) return undefined;
      const id = this.tokenId(token);
      if (id === undefined)
        throw new EngineError(
          'TOKENIZER',
          `${source}: ${field} ${JSON.stringify(token)} is not a token of tokenizer.json; fix ${field} in tokenizer_config.json`,
        );
      return id;
    };
    this.bosToken = meta.bosToken;
    this.padToken = meta.padToken;
    this.unkToken = meta.unkToken;
    this.eosToken = meta.eosToken;
    const eos = idOf(meta.eosToken, 'eos_token') ?? meta.generationEosIds?.[0] ?? inner.eos_token_id;
    if (eos === undefined)
      throw new EngineError(
        'TOKENIZER',
        `${source}: no eos_token in tokenizer_config.json and no eos_token_id in generation_config.json; set eos_token (e.g. "<|im_end|>") in tokenizer_config.json`,
      );
    this.eosTokenId = eos;
    if (this.eosToken === undefined) this.eosToken = this.decode([eos]);
    this.padTokenId = idOf(meta.padToken, 'pad_token') ?? inner.pad_token_id;
    idOf(meta.bosToken, 'bos_token');
    this.stopTokenIds = [...new Set([eos, ...(meta.generationEosIds ?? [])])];
    for (const id of this.stopTokenIds)
      if (id < 0 || id >= this.vocabSize)
        throw new EngineError(
          'TOKENIZER',
          `${source}: eos_token_id ${id} in generation_config.json is outside the vocabulary [0, ${this.vocabSize}); fix generation_config.json`,
        );
    this.chatTemplates = meta.chatTemplates ?? {};
    this.chatTemplate =
      meta.chatTemplate ??
      this.chatTemplates.default ??
      (typeof inner.chat_template === 'string' ? inner.chat_template : undefined);
  }

  encode(text: string): number[] {
    return this.inner.encode(text, { add_special_tokens: false });
  }

  decode(ids: readonly number[], options: { skipSpecialTokens?: boolean } = {}): string {
    return this.inner.decode([...ids], { skip_special_tokens: options.skipSpecialTokens ?? false });
  }

  tokenId(token: string): number | undefined {
    return this.addedTokens.get(token) ?? this.inner.model.tokens_to_ids.get(token);
  }
}

/** `"<|im_end|>"`, `{ "content": "<|im_end|>", … }` (AddedToken dict) or null, as configs write it. */
export function tokenString(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string')
    return (value as { content: string }).content;
  return undefined;
}

/** Splits `chat_template` into the default template and the named ones (string or list form). */
export function chatTemplatesOf(
  value: unknown,
  source: string,
): { default?: string; named: Record<string, string> } {
  if (value === undefined || value === null) return { named: {} };
  if (typeof value === 'string') return { default: value, named: { default: value } };
  if (Array.isArray(value)) {
    const named: Record<string, string> = {};
    for (const entry of value) {
      const e = entry as { name?: unknown; template?: unknown };
      if (typeof e?.name !== 'string' || typeof e.template !== 'string')
        throw new EngineError(
          'TOKENIZER',
          `${source}: chat_template is a list whose entries are not { "name", "template" } strings; fix chat_template`,
        );
      named[e.name] = e.template;
    }
    return { ...(named.default !== undefined ? { default: named.default } : {}), named };
  }
  throw new EngineError(
    'TOKENIZER',
    `${source}: chat_template must be a string or a list of { name, template }`,
  );
}

/** A tokenizer from parsed tokenizer.json and tokenizer_config.json objects. */
export function createHfTokenizer(
  tokenizerJSON: object,
  tokenizerConfig: object,
  extra: Pick<HfTokenizerMeta, 'chatTemplate' | 'generationEosIds' | 'source'> & {
    /** path of tokenizer.json, for error messages */
    tokenizerPath?: string;
  } = {},
): HfTokenizer {
  const cfg = tokenizerConfig as Record<string, unknown>;
  const source = extra.source ?? 'tokenizer_config.json';
  const templates = chatTemplatesOf(cfg.chat_template, source);
  let inner: PreTrained;
  try {
    // The template is ours to render; lenml gets a config without it (it would compile it again).
    const { chat_template: _, ...rest } = cfg;
    inner = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig: rest } as never);
  } catch (err) {
    throw new EngineError(
      'TOKENIZER',
      `${extra.tokenizerPath ?? 'tokenizer.json'} could not be loaded: ${(err as Error).message}; is it a Hugging Face tokenizers file (save_pretrained writes one)?`,
      { cause: err },
    );
  }
  const chatTemplate = extra.chatTemplate ?? templates.default;
  return new HfTokenizer(inner, {
    ...(chatTemplate !== undefined ? { chatTemplate } : {}),
    chatTemplates:
      chatTemplate !== undefined ? { ...templates.named, default: chatTemplate } : templates.named,
    bosToken: tokenString(cfg.bos_token),
    eosToken: tokenString(cfg.eos_token),
    padToken: tokenString(cfg.pad_token),
    unkToken: tokenString(cfg.unk_token),
    ...(extra.generationEosIds ? { generationEosIds: extra.generationEosIds } : {}),
    source,
  });
}
