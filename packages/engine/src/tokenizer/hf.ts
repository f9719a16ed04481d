import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TokenizerLoader } from '@lenml/tokenizers';
import { EngineError } from '../errors.js';
import type { Tokenizer } from './types.js';

type PreTrained = ReturnType<typeof TokenizerLoader.fromPreTrained>;

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

  constructor(private readonly inner: PreTrained) {
    const added = inner.added_tokens;
    this.specialTokens = new Map(added.filter((t) => t.special).map((t) => [t.content, t.id]));
    const maxAdded = added.reduce((m, t) => Math.max(m, t.id), -1);
    this.vocabSize = Math.max(inner.model.vocab.length, maxAdded + 1);
    const eos = inner.eos_token_id;
    if (eos === undefined)
      throw new EngineError(
        'TOKENIZER',
        'the tokenizer config names no eos_token; set one in tokenizer_config.json',
      );
    this.eosTokenId = eos;
    this.padTokenId = inner.pad_token_id;
    this.chatTemplate = typeof inner.chat_template === 'string' ? inner.chat_template : undefined;
  }

  encode(text: string): number[] {
    return this.inner.encode(text, { add_special_tokens: false });
  }

  decode(ids: readonly number[]): string {
    return this.inner.decode([...ids], { skip_special_tokens: false });
  }

  tokenId(token: string): number | undefined {
    return this.specialTokens.get(token) ?? this.inner.model.tokens_to_ids.get(token);
  }
}

/** A tokenizer from parsed tokenizer.json and tokenizer_config.json objects. */
export function createHfTokenizer(tokenizerJSON: object, tokenizerConfig: object): HfTokenizer {
  try {
    return new HfTokenizer(TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig } as never));
  } catch (err) {
    if (err instanceof EngineError) throw err;
    throw new EngineError('TOKENIZER', `tokenizer.json could not be loaded: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/** Loads tokenizer.json + tokenizer_config.json from a Hugging Face model directory. */
export async function loadHfTokenizer(dir: string): Promise<HfTokenizer> {
  const path = join(dir, 'tokenizer.json');
  if (!existsSync(path)) throw new EngineError('CHECKPOINT_NOT_FOUND', `no tokenizer.json in ${dir}`);
  const json = JSON.parse(await readFile(path, 'utf8')) as object;
  const cfgPath = join(dir, 'tokenizer_config.json');
  const config = existsSync(cfgPath) ? (JSON.parse(await readFile(cfgPath, 'utf8')) as object) : {};
  return createHfTokenizer(json, config);
}
