import { existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EngineError } from '../errors.js';
import { createHfTokenizer, type HfTokenizer } from './hf.js';

async function readJsonFile(path: string, what: string): Promise<Record<string, unknown>> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new EngineError('TOKENIZER', `${path} is not valid JSON (${(err as Error).message}); ${what}`, {
      cause: err,
    });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new EngineError('TOKENIZER', `${path} must hold a JSON object; ${what}`);
  return value as Record<string, unknown>;
}

/** generation_config.json `eos_token_id`: an int, a list of ints, or absent. */
function eosIdsOf(value: unknown, path: string): number[] | undefined {
  if (value === undefined || value === null) return undefined;
  const list = Array.isArray(value) ? value : [value];
  if (!list.every((x) => Number.isInteger(x) && (x as number) >= 0))
    throw new EngineError('TOKENIZER', `${path}: eos_token_id must be a token id or a list of them`);
  return list as number[];
}

/**
 * Loads the tokenizer of a Hugging Face model directory as transformers' `AutoTokenizer` reads it:
 * `tokenizer.json` (required), `tokenizer_config.json` (special tokens, `chat_template`),
 * `chat_template.jinja` (newer transformers saves the template there; it wins over the config's),
 * and `generation_config.json` (`eos_token_id`, the ids that end generation). Each failure names the
 * file and what to do.
 */
export async function loadHfTokenizer(dir: string): Promise<HfTokenizer> {
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new EngineError(
      'CHECKPOINT_NOT_FOUND',
      `${dir} is not a directory; pass a Hugging Face model directory`,
    );
  const path = join(dir, 'tokenizer.json');
  if (!existsSync(path))
    throw new EngineError(
      'TOKENIZER',
      `no tokenizer.json in ${dir}; copy the model's tokenizer files there (tokenizer.save_pretrained(dir) writes tokenizer.json and tokenizer_config.json)`,
    );
  const json = await readJsonFile(path, 'copy the tokenizer.json of the model again');
  const cfgPath = join(dir, 'tokenizer_config.json');
  const config = existsSync(cfgPath)
    ? await readJsonFile(cfgPath, 'copy the tokenizer_config.json of the model again')
    : {};
  const jinjaPath = join(dir, 'chat_template.jinja');
  const chatTemplate = existsSync(jinjaPath) ? await readFile(jinjaPath, 'utf8') : undefined;
  const genPath = join(dir, 'generation_config.json');
  const generation = existsSync(genPath)
    ? await readJsonFile(genPath, 'copy the generation_config.json of the model again or delete it')
    : {};
  const generationEosIds = eosIdsOf(generation.eos_token_id, genPath);
  return createHfTokenizer(json, config, {
    tokenizerPath: path,
    source: existsSync(cfgPath) ? cfgPath : path,
    ...(chatTemplate !== undefined ? { chatTemplate } : {}),
    ...(generationEosIds ? { generationEosIds } : {}),
  });
}
