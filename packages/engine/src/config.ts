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
    rope_theta: z
      .number()
      .positive()
      .optional()
      .describe('RoPE base (transformers v4 layout); default 10000, or rope_parameters.rope_theta'),
    rope_scaling: z
      .record(z.string(), z.unknown())
      .nullable()
      .optional()
      .describe('v4 RoPE scaling; only null, absent or rope_type "default" is implemented'),
    rope_parameters: z
      .record(z.string(), z.unknown())
      .nullable()
      .optional()
      .describe('v5 RoPE layout { rope_theta, rope_type }; only rope_type "default" is implemented'),
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
    torch_dtype: z
      .string()
      .nullable()
      .optional()
      .describe('dtype of the saved weights (v4 name): float32, bfloat16 or float16; set by saveModel'),
    dtype: z
      .string()
      .nullable()
      .optional()
      .describe('dtype of the saved weights (v5 name, same values as torch_dtype); set by saveModel'),
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
  modelDtype(config);
  return config;
}

/** The weight dtypes the engine reads and writes, by their transformers names. */
export const MODEL_DTYPES = ['float32', 'bfloat16', 'float16'] as const;
export type ModelDtype = (typeof MODEL_DTYPES)[number];

/**
 * The dtype of a config's weights: transformers v5 writes `dtype`, v4 `torch_dtype`; absent means
 * float32 (what `from_pretrained` would assume for a config that does not say).
 */
export function modelDtype(config: ModelConfig): ModelDtype {
  const field = config.dtype != null ? 'dtype' : 'torch_dtype';
  const value = config.dtype ?? config.torch_dtype ?? 'float32';
  if (!(MODEL_DTYPES as readonly string[]).includes(value)) {
    throw new EngineError(
      'INVALID_CONFIG',
      `config.json ${field} is "${value}"; the engine reads and writes ${MODEL_DTYPES.join(', ')}`,
    );
  }
  if (config.dtype != null && config.torch_dtype != null && config.dtype !== config.torch_dtype) {
    throw new EngineError(
      'INVALID_CONFIG',
      `config.json says dtype "${config.dtype}" but torch_dtype "${config.torch_dtype}"; keep one of them`,
    );
  }
  return value as ModelDtype;
}

/**
 * The RoPE base from either layout: v4 `rope_theta` (+ `rope_scaling`), v5 `rope_parameters`
 * `{ rope_theta, rope_type }`. Any scaling other than rope_type "default" (llama3, yarn, linear,
 * dynamic, longrope, ...) is refused naming the field, since running it unscaled would silently give
 * another model.
 */
export function ropeTheta(config: ModelConfig): number {
  for (const field of ['rope_scaling', 'rope_parameters'] as const) {
    const params = config[field];
    if (params == null) continue;
    const type = params.rope_type ?? params.type ?? 'default';
    if (type !== 'default') {
      throw new EngineError(
        'INVALID_CONFIG',
        `config.json ${field}.rope_type is ${JSON.stringify(type)}; only unscaled RoPE ("default") is implemented, so this model would run with the wrong positions`,
      );
    }
    if (field === 'rope_parameters' && typeof params.rope_theta !== 'number' && !('rope_type' in params)) {
      throw new EngineError(
        'INVALID_CONFIG',
        'config.json rope_parameters has neither rope_theta nor rope_type; per-layer-type RoPE parameters are not implemented',
      );
    }
  }
  const nested = config.rope_parameters?.rope_theta;
  if (nested !== undefined && !(typeof nested === 'number' && nested > 0)) {
    throw new EngineError(
      'INVALID_CONFIG',
      `config.json rope_parameters.rope_theta is ${JSON.stringify(nested)}; it must be a positive number`,
    );
  }
  if (typeof nested === 'number' && config.rope_theta !== undefined && nested !== config.rope_theta) {
    throw new EngineError(
      'INVALID_CONFIG',
      `config.json says rope_theta ${config.rope_theta} but rope_parameters.rope_theta ${nested}; keep one of them`,
    );
  }
  return (nested as number | undefined) ?? config.rope_theta ?? 10000;
}

/**
 * The config.json the engine writes: what was read (unknown fields kept) plus the fields every
 * transformers version needs to rebuild the same model: `head_dim` (Qwen3Config defaults it to
 * 128), `rope_theta` (v4) and `rope_parameters` (v5), and the weights' dtype as `torch_dtype` (v4)
 * and `dtype` (v5).
 */
export function toHfConfigJson(config: ModelConfig, dtype: ModelDtype): Record<string, unknown> {
  const n = toNativeConfig(config);
  const out: Record<string, unknown> = { ...config };
  out.num_key_value_heads = n.kvHeads;
  out.head_dim = n.headDim;
  out.rope_theta = n.ropeTheta;
  out.rope_scaling = null;
  out.rope_parameters = { ...(config.rope_parameters ?? {}), rope_theta: n.ropeTheta, rope_type: 'default' };
  out.torch_dtype = dtype;
  out.dtype = dtype;
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
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
    ropeTheta: ropeTheta(config),
    qkNorm: arch === 'Qwen3ForCausalLM',
    qkvBias: qwen2 ? true : config.attention_bias,
    oBias: qwen2 ? false : config.attention_bias,
    tied: config.tie_word_embeddings,
    maxPositions: config.max_position_embeddings,
  };
}
