import { z } from 'zod';
import { EngineError } from './errors.js';

/** The architectures this engine implements, by their Hugging Face class name. */
export const SUPPORTED_ARCHITECTURES = ['LlamaForCausalLM', 'Qwen2ForCausalLM', 'Qwen3ForCausalLM'] as const;

const posInt = z.number().int().positive();

/**
 * A Hugging Face `config.json` of a Llama / Qwen2 / Qwen3 decoder. Unknown fields are kept (and
 * written back on save) so a checkpoint round-trips; the fields below are the ones the engine reads.
 */
export const ModelConfigSchema = z
  .object({
    architectures: z.array(z.string()).min(1).describe('HF model class, e.g. ["Qwen3ForCausalLM"]'),
    model_type: z.string().optional().describe('HF model type (llama, qwen2, qwen3); informative'),
    vocab_size: posInt.describe('number of token ids (embedding rows)'),
    hidden_size: posInt.describe('model width H'),
    intermediate_size: posInt.describe('SwiGLU MLP width'),
    num_hidden_layers: posInt.describe('number of decoder blocks'),
    num_attention_heads: posInt.describe('query heads'),
    num_key_value_heads: posInt
      .nullable()
      .optional()
      .describe('key/value heads (GQA); defaults to num_attention_heads'),
    head_dim: posInt
      .nullable()
      .optional()
      .describe('per-head width; defaults to hidden_size / num_attention_heads'),
    rms_norm_eps: z.number().positive().default(1e-6).describe('RMSNorm epsilon'),
    rope_theta: z.number().positive().default(10000).describe('RoPE base'),
    rope_scaling: z.null().optional().describe('only unscaled RoPE is implemented: null or absent'),
    max_position_embeddings: posInt.default(2048).describe('longest sequence the model accepts'),
    tie_word_embeddings: z.boolean().default(false).describe('lm_head shares the embedding matrix'),
    attention_bias: z
      .boolean()
      .default(false)
      .describe('Llama/Qwen3: bias on q/k/v/o projections (Qwen2 always has q/k/v bias)'),
    mlp_bias: z.literal(false).optional().describe('MLP biases are not implemented'),
    use_sliding_window: z.literal(false).optional().describe('sliding-window attention is not implemented'),
    hidden_act: z
      .literal('silu')
      .default('silu')
      .describe('MLP activation; only SwiGLU (silu) is implemented'),
    initializer_range: z.number().positive().default(0.02).describe('std of the normal init of createModel'),
    torch_dtype: z.string().optional().describe('dtype of the saved weights; set by saveModel'),
    bos_token_id: z.number().int().nullable().optional().describe('beginning-of-sequence id'),
    eos_token_id: z
      .union([z.number().int(), z.array(z.number().int())])
      .nullable()
      .optional()
      .describe('end-of-sequence id(s)'),
  })
  .loose()
  .describe('Hugging Face config.json of a supported decoder');
export type ModelConfig = z.infer<typeof ModelConfigSchema>;
export type ModelConfigInput = z.input<typeof ModelConfigSchema>;

/** The shape facts the native backend needs, derived once from a parsed config. */
export interface NativeModelConfig {
  vocab: number;
  hidden: number;
  intermediate: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  eps: number;
  ropeTheta: number;
  qkNorm: boolean;
  qkvBias: boolean;
  oBias: boolean;
  tied: boolean;
  maxPositions: number;
}

/** Parses and checks a config.json object; throws an EngineError that names the bad field. */
export function parseModelConfig(input: unknown): ModelConfig {
  const parsed = ModelConfigSchema.safeParse(input);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new EngineError('INVALID_CONFIG', `config.json is not a supported model config (${issues})`, {
      cause: parsed.error,
    });
  }
  const config = parsed.data;
  const arch = config.architectures[0] ?? '';
  if (!(SUPPORTED_ARCHITECTURES as readonly string[]).includes(arch)) {
    throw new EngineError(
      'UNSUPPORTED_ARCHITECTURE',
      `architecture "${arch}" is not implemented; supported: ${SUPPORTED_ARCHITECTURES.join(', ')}`,
    );
  }
  toNativeConfig(config);
  return config;
}

/** Maps HF fields to the native layout flags (which optional tensors exist). */
export function toNativeConfig(config: ModelConfig): NativeModelConfig {
  const arch = config.architectures[0];
  const heads = config.num_attention_heads;
  const kvHeads = config.num_key_value_heads ?? heads;
  const headDim = config.head_dim ?? config.hidden_size / heads;
  if (!Number.isInteger(headDim) || headDim % 2 !== 0) {
    throw new EngineError(
      'INVALID_CONFIG',
      `head_dim ${headDim} must be an even integer; set head_dim explicitly`,
    );
  }
  if (heads % kvHeads !== 0) {
    throw new EngineError(
      'INVALID_CONFIG',
      `num_attention_heads (${heads}) must be a multiple of num_key_value_heads (${kvHeads})`,
    );
  }
  const qwen2 = arch === 'Qwen2ForCausalLM';
  return {
    vocab: config.vocab_size,
    hidden: config.hidden_size,
    intermediate: config.intermediate_size,
    layers: config.num_hidden_layers,
    heads,
    kvHeads,
    headDim,
    eps: config.rms_norm_eps,
    ropeTheta: config.rope_theta,
    qkNorm: arch === 'Qwen3ForCausalLM',
    qkvBias: qwen2 ? true : config.attention_bias,
    oBias: qwen2 ? false : config.attention_bias,
    tied: config.tie_word_embeddings,
    maxPositions: config.max_position_embeddings,
  };
}
