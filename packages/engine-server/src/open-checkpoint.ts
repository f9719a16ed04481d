import { loadCheckpointTokenizer, loadModel, type Model, type Tokenizer } from '@agentrl/engine';
import { EngineServerError } from './errors.js';

/** A served model is only run forward (generation, prompt logprobs): no gradients, no Adam moments. */
export const SERVED = { training: false } as const;

export interface OpenCheckpoint {
  model: Model;
  tokenizer: Tokenizer;
  /** `hf`: the directory's tokenizer.json; `char`: the byte tokenizer of agentrl's tiny checkpoints */
  tokenizerKind: 'hf' | 'char';
}

/**
 * Opens a checkpoint directory with its own tokenizer (engine's loadCheckpointTokenizer:
 * `tokenizer.json` + tokenizer_config.json, chat_template.jinja, generation_config.json when
 * present; the char tokenizer for agentrl's tiny checkpoints, which the trainer builds on
 * `createCharTokenizer()` without writing a tokenizer file — apps/trainer/src/train/create-environment.ts).
 */
export async function openCheckpoint(dir: string): Promise<OpenCheckpoint> {
  let model: Model;
  try {
    model = await loadModel(dir, SERVED);
  } catch (err) {
    throw new EngineServerError('CHECKPOINT', `cannot serve ${dir}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  try {
    const { tokenizer, kind } = await loadCheckpointTokenizer(dir, model.config.vocab_size);
    return { model, tokenizer, tokenizerKind: kind };
  } catch (err) {
    throw new EngineServerError('CHECKPOINT', `cannot serve ${dir}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}
