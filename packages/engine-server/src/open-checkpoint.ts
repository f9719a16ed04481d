import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  assertVocabularyFits,
  createCharTokenizer,
  loadHfTokenizer,
  loadModel,
  type Model,
  type Tokenizer,
} from '@agentrl/engine';
import { EngineServerError } from './errors.js';

export interface OpenCheckpoint {
  model: Model;
  tokenizer: Tokenizer;
  /** `hf`: the directory's tokenizer.json; `char`: the byte tokenizer of agentrl's tiny checkpoints */
  tokenizerKind: 'hf' | 'char';
}

/**
 * Opens a checkpoint directory with its own tokenizer: `tokenizer.json` (+ tokenizer_config.json,
 * chat_template.jinja, generation_config.json) when present. agentrl's tiny checkpoints carry no
 * tokenizer file: the trainer builds them on the default char tokenizer (`createCharTokenizer()`,
 * apps/trainer/src/train/create-environment.ts), so a directory without tokenizer.json whose
 * vocab_size is that tokenizer's is served with it; any other is refused, naming the file.
 */
export async function openCheckpoint(dir: string): Promise<OpenCheckpoint> {
  let model: Model;
  try {
    model = await loadModel(dir);
  } catch (err) {
    throw new EngineServerError('CHECKPOINT', `cannot serve ${dir}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const hasTokenizer = existsSync(join(dir, 'tokenizer.json'));
  let tokenizer: Tokenizer;
  if (hasTokenizer) {
    try {
      tokenizer = await loadHfTokenizer(dir);
    } catch (err) {
      throw new EngineServerError('CHECKPOINT', `cannot serve ${dir}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  } else {
    tokenizer = createCharTokenizer();
    if (model.config.vocab_size !== tokenizer.vocabSize)
      throw new EngineServerError(
        'CHECKPOINT',
        `cannot serve ${dir}: it has no tokenizer.json and its vocab_size ${model.config.vocab_size} is not the ${tokenizer.vocabSize} of agentrl's char tokenizer; copy the model's tokenizer.json and tokenizer_config.json into ${dir}`,
      );
  }
  try {
    assertVocabularyFits(tokenizer, model.config.vocab_size, {
      tokenizer: join(dir, 'tokenizer.json'),
      config: join(dir, 'config.json'),
    });
  } catch (err) {
    throw new EngineServerError('CHECKPOINT', `cannot serve ${dir}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return { model, tokenizer, tokenizerKind: hasTokenizer ? 'hf' : 'char' };
}
