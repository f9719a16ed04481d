import type { ModelConfigInput } from './config.js';
import { createCharTokenizer } from './tokenizer/char.js';

/**
 * Model configs shared by the workspace's tests and fixtures (`@agentrl/engine/testing`), so that
 * "the tiny model" is written once. Not part of the engine's API: no library code imports this.
 */

/** A tiny Qwen3-style config (GQA 4/2, q/k norm, tied embeddings, vocab 50) that runs in milliseconds. */
export function tinyModelConfig(overrides: Partial<ModelConfigInput> = {}): ModelConfigInput {
  return {
    architectures: ['Qwen3ForCausalLM'],
    vocab_size: 50,
    hidden_size: 32,
    intermediate_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 8,
    max_position_embeddings: 128,
    tie_word_embeddings: true,
    initializer_range: 0.1,
    ...overrides,
  };
}

/**
 * The trainer's smoke-preset model over the char tokenizer (its vocabulary and end-of-text id):
 * 2 layers x 64, GQA 2/1, tied, saved as a Qwen3 checkpoint that `agentrl serve` and the engine
 * server can open with the char tokenizer.
 */
export function charModelConfig(overrides: Partial<ModelConfigInput> = {}): ModelConfigInput {
  const tok = createCharTokenizer();
  return {
    architectures: ['Qwen3ForCausalLM'],
    model_type: 'qwen3',
    vocab_size: tok.vocabSize,
    hidden_size: 64,
    intermediate_size: 128,
    num_hidden_layers: 2,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    head_dim: 32,
    max_position_embeddings: 256,
    tie_word_embeddings: true,
    eos_token_id: tok.eosTokenId,
    ...overrides,
  };
}

/**
 * The native policy-loss config of the reference run (rStar2-Agent's GRPO-RoC): clip-higher 0.2 /
 * 0.28, dual clip 3, log-ratio clamp 20, token-mean (aggregation 0), temperature 1, token-level
 * ratios: what `devicePolicyLoss` takes as `config` in tests.
 */
export const GRPO_ROC_NATIVE_LOSS: Readonly<Record<string, number>> = Object.freeze({
  temperature: 1,
  clipLow: 0.2,
  clipHigh: 0.28,
  dualClip: 3,
  maxLogRatio: 20,
  aggregation: 0,
});
