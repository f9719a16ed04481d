import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  createCharTokenizer,
  loadCheckpointTokenizer,
  loadHfTokenizer,
  type Tokenizer,
  vocabularyMismatch,
} from '@agentrl/engine';
import type { TrainConfig } from '../config/schema.js';
import { TrainerError } from '../errors.js';

/** The policy's tokenizer and where it came from (null dir = the built-in byte tokenizer). */
export interface RunTokenizer {
  tokenizer: Tokenizer;
  /** Directory holding tokenizer.json and its sibling files; null for the byte tokenizer. */
  dir: string | null;
}

/** Files that make up a Hugging Face tokenizer; copied into every checkpoint beside the weights. */
export const TOKENIZER_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'chat_template.jinja',
  'special_tokens_map.json',
  'generation_config.json',
  'vocab.json',
  'merges.txt',
  'added_tokens.json',
] as const;

/**
 * Which tokenizer a run uses: `model.tokenizer` when set; otherwise the model directory's own
 * (`model.init`, or the checkpoint being resumed or evaluated; @agentrl/engine's
 * `loadCheckpointTokenizer`: its tokenizer.json, or the byte tokenizer for an agentrl tiny
 * checkpoint whose vocab_size is the byte tokenizer's); otherwise the byte tokenizer of the
 * from-scratch tiny model. A missing tokenizer stops with a message naming the file.
 */
export async function loadRunTokenizer(cfg: TrainConfig, modelDir: string | null): Promise<RunTokenizer> {
  const given = cfg.model.tokenizer;
  try {
    if (given !== null) {
      if (!existsSync(join(given, 'tokenizer.json')))
        throw new TrainerError(
          'CHECKPOINT',
          `tokenizer: no tokenizer.json in ${given} (model.tokenizer); point --model.tokenizer at a directory with the model's tokenizer.json and tokenizer_config.json (tokenizer.save_pretrained(dir) writes them)`,
        );
      return { tokenizer: await loadHfTokenizer(given), dir: given };
    }
    if (modelDir === null) return { tokenizer: createCharTokenizer(), dir: null };
    const opened = await loadCheckpointTokenizer(modelDir, vocabSizeOf(modelDir) ?? Number.NaN);
    return { tokenizer: opened.tokenizer, dir: opened.kind === 'hf' ? modelDir : null };
  } catch (cause) {
    if (cause instanceof TrainerError) throw cause;
    throw new TrainerError(
      'CHECKPOINT',
      `tokenizer: ${(cause as Error).message}; or point --model.tokenizer at the tokenizer's directory`,
      { cause },
    );
  }
}

/** Stops when the tokenizer has ids the embedding has no row for, naming both files. */
export function assertTokenizerFits(t: RunTokenizer, embeddingRows: number, modelDir: string | null): void {
  const err = vocabularyMismatch(t.tokenizer, embeddingRows, {
    tokenizer: t.dir ? join(t.dir, 'tokenizer.json') : 'the byte tokenizer',
    config: modelDir ? join(modelDir, 'config.json') : 'the configured model',
  });
  if (err) throw new TrainerError('CHECKPOINT', `tokenizer: ${err.message}`, { cause: err });
}

/** Copies the tokenizer files next to a checkpoint's weights (files the checkpoint already has stay). */
export function copyTokenizerFiles(from: string | null, to: string): void {
  if (from === null) return;
  for (const f of TOKENIZER_FILES) {
    if (existsSync(join(from, f)) && !existsSync(join(to, f))) copyFileSync(join(from, f), join(to, f));
  }
}

function vocabSizeOf(dir: string): number | null {
  try {
    const c = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { vocab_size?: unknown };
    return typeof c.vocab_size === 'number' ? c.vocab_size : null;
  } catch {
    return null;
  }
}
