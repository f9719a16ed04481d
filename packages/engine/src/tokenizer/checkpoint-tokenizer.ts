import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { EngineError } from '../errors.js';
import { createCharTokenizer } from './char.js';
import { loadHfTokenizer } from './hf-files.js';
import type { Tokenizer } from './types.js';
import { assertVocabularyFits } from './vocab-check.js';

/**
 * The tokenizer a checkpoint directory was trained with: its `tokenizer.json` (see
 * loadHfTokenizer) when present; otherwise, for agentrl's tiny checkpoints, which carry no tokenizer
 * file because the trainer builds them on `createCharTokenizer()`, the char tokenizer when
 * `vocabSize` (config.json `vocab_size`) is that tokenizer's. Anything else stops with a message that
 * names tokenizer.json; a tokenizer larger than the embedding names both files.
 */
export async function loadCheckpointTokenizer(
  dir: string,
  vocabSize: number,
): Promise<{ tokenizer: Tokenizer; kind: 'hf' | 'char' }> {
  const where = { tokenizer: join(dir, 'tokenizer.json'), config: join(dir, 'config.json') };
  if (existsSync(where.tokenizer)) {
    const tokenizer = await loadHfTokenizer(dir);
    assertVocabularyFits(tokenizer, vocabSize, where);
    return { tokenizer, kind: 'hf' };
  }
  const tokenizer = createCharTokenizer();
  if (vocabSize !== tokenizer.vocabSize)
    throw new EngineError(
      'TOKENIZER',
      `${dir} has no tokenizer.json and its vocab_size ${vocabSize} is not the ${tokenizer.vocabSize} of agentrl's char tokenizer; copy the model's tokenizer.json and tokenizer_config.json into ${dir}`,
    );
  return { tokenizer, kind: 'char' };
}
