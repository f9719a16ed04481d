import { EngineError } from '../errors.js';
import type { Tokenizer } from './types.js';

/**
 * Checks that every id the tokenizer can produce has a row in the model's embedding. The HF
 * convention lets `vocab_size` exceed the tokenizer (Qwen3: 151,669 tokens, 151,936 rows, padded
 * for efficient kernels), so only a tokenizer LARGER than the embedding is an error. Returns the
 * error (naming both files) or null.
 */
export function vocabularyMismatch(
  tokenizer: Pick<Tokenizer, 'vocabSize'>,
  embeddingRows: number,
  where: { tokenizer?: string; config?: string } = {},
): EngineError | null {
  if (tokenizer.vocabSize <= embeddingRows) return null;
  const tok = where.tokenizer ?? 'tokenizer.json';
  const cfg = where.config ?? 'config.json';
  return new EngineError(
    'CHECKPOINT_MISMATCH',
    `${tok} has ${tokenizer.vocabSize} tokens but ${cfg} has vocab_size ${embeddingRows}: ids >= ${embeddingRows} have no embedding row; use the tokenizer that belongs to this checkpoint (or resize the embedding and set vocab_size >= ${tokenizer.vocabSize})`,
  );
}

/** Throws vocabularyMismatch's error, if any. */
export function assertVocabularyFits(
  tokenizer: Pick<Tokenizer, 'vocabSize'>,
  embeddingRows: number,
  where: { tokenizer?: string; config?: string } = {},
): void {
  const err = vocabularyMismatch(tokenizer, embeddingRows, where);
  if (err) throw err;
}
