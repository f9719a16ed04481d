import { EngineError } from './errors.js';

/**
 * A packed batch: S sequences concatenated into `tokenIds` (length T); `cuSeqlens` holds the S+1
 * boundaries (0, end of seq 0, ..., T). Positions restart at 0 in every sequence and attention is
 * causal inside each sequence only.
 */
export interface PackedBatch {
  tokenIds: Int32Array;
  cuSeqlens: Int32Array;
}

/** Packs token sequences into one PackedBatch. */
export function packSequences(sequences: readonly (readonly number[] | Int32Array)[]): PackedBatch {
  const total = sequences.reduce((n, s) => n + s.length, 0);
  const tokenIds = new Int32Array(total);
  const cuSeqlens = new Int32Array(sequences.length + 1);
  let at = 0;
  sequences.forEach((s, i) => {
    tokenIds.set(s, at);
    at += s.length;
    cuSeqlens[i + 1] = at;
  });
  return { tokenIds, cuSeqlens };
}

/** Throws INVALID_BATCH unless the batch is well-formed for a model of this vocab and context. */
export function validateBatch(batch: PackedBatch, vocab: number, maxPositions: number): void {
  const { tokenIds, cuSeqlens } = batch;
  if (!(tokenIds instanceof Int32Array) || !(cuSeqlens instanceof Int32Array)) {
    throw new EngineError('INVALID_BATCH', 'tokenIds and cuSeqlens must be Int32Arrays');
  }
  if (tokenIds.length === 0) throw new EngineError('INVALID_BATCH', 'the batch has no tokens');
  if (cuSeqlens.length < 2 || cuSeqlens[0] !== 0 || cuSeqlens[cuSeqlens.length - 1] !== tokenIds.length) {
    throw new EngineError(
      'INVALID_BATCH',
      `cuSeqlens must start at 0 and end at tokenIds.length (${tokenIds.length}); got [${cuSeqlens.slice(0, 4).join(', ')}${cuSeqlens.length > 4 ? ', ...' : ''}]`,
    );
  }
  for (let s = 0; s + 1 < cuSeqlens.length; s++) {
    const len = (cuSeqlens[s + 1] ?? 0) - (cuSeqlens[s] ?? 0);
    if (len <= 0)
      throw new EngineError('INVALID_BATCH', `sequence ${s} is empty: cuSeqlens must strictly increase`);
    if (len > maxPositions) {
      throw new EngineError(
        'INVALID_BATCH',
        `sequence ${s} has ${len} tokens, more than max_position_embeddings (${maxPositions})`,
      );
    }
  }
  for (let t = 0; t < tokenIds.length; t++) {
    const id = tokenIds[t] ?? -1;
    if (id < 0 || id >= vocab) {
      throw new EngineError(
        'INVALID_BATCH',
        `token id ${id} at position ${t} is outside the vocabulary [0, ${vocab})`,
      );
    }
  }
}
