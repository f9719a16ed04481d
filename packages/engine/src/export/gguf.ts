// A GGUF v3 writer (ggml's docs/gguf.md) for the engine's Llama, Qwen2 and Qwen3 models, so
// llama.cpp can run the same weights and architecture: fp32 tensors, `<arch>.*` hyperparameters
// (llama.cpp's `llama`, `qwen2` and `qwen3`) and an SPM-style vocabulary.
// It exists for side-by-side checks (logits, decode speed), not as a conversion tool for HF models.
import { closeSync, openSync, writeSync } from 'node:fs';
import { EngineError } from '../errors.js';
import type { Model } from '../model.js';

/** GGUF metadata value types (gguf.md, `gguf_metadata_value_type`). */
export const GgufType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;

/** ggml tensor type of every tensor this writer emits. */
export const GGML_TYPE_F32 = 0;
const ALIGNMENT = 32;

/** A metadata value: typed scalars, strings, and arrays of one element type. */
export type GgufValue =
  | { type: 'u32' | 'i32' | 'f32' | 'u64'; value: number }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | { type: 'array'; of: 'string'; value: readonly string[] }
  | { type: 'array'; of: 'f32' | 'i32'; value: ArrayLike<number> };

export interface GgufTensor {
  name: string;
  /** Row-major shape as PyTorch writes it ([out, in] for a linear weight); stored reversed (ggml `ne`). */
  shape: readonly number[];
  data: Float32Array;
}

export interface ExportGgufOptions {
  /** `general.name` (default "agentrl"). */
  name?: string;
  /**
   * Token strings, one per id (vocab-sized). Default: an SPM vocabulary that llama.cpp accepts for
   * any model with at least 259 ids: `<unk>`, `<s>`, `</s>`, the 256 byte tokens `<0xNN>`, then
   * `▁t<id>` fillers. Token ids, not text, are what side-by-side checks feed both engines.
   */
  tokens?: readonly string[];
  bos?: number;
  eos?: number;
}

/** The default vocabulary of `exportGguf` and each token's llama.cpp type (1 normal, 2 unknown, 3 control, 6 byte). */
export function syntheticVocabulary(vocab: number): {
  tokens: string[];
  types: Int32Array;
  scores: Float32Array;
} {
  if (vocab < 259) {
    throw new EngineError(
      'INVALID_REQUEST',
      `gguf: the default vocabulary needs at least 259 ids (3 special + 256 bytes) and this model has ${vocab}; pass options.tokens`,
    );
  }
  const tokens = ['<unk>', '<s>', '</s>'];
  for (let b = 0; b < 256; b++) tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  for (let i = tokens.length; i < vocab; i++) tokens.push(`\u2581t${i}`);
  const types = new Int32Array(vocab).fill(1);
  types[0] = 2;
  types[1] = 3;
  types[2] = 3;
  types.fill(6, 3, 259);
  const scores = Float32Array.from({ length: vocab }, (_, i) => (i < 259 ? 0 : -i));
  return { tokens, types, scores };
}

/**
 * Reorders the rows of a q_proj / k_proj weight [heads * d, in] from Hugging Face's rotate-half
 * RoPE layout (pairs i, i + d/2) to llama.cpp's interleaved one (pairs 2i, 2i + 1), as llama.cpp's
 * convert_hf_to_gguf.py does for the llama architecture: row 2i + j of a head takes row j * d/2 + i.
 * Scores q.k are unchanged, since q and k are permuted alike.
 */
export function permuteRopeRows(w: Float32Array, heads: number, inFeatures: number): Float32Array {
  const d = w.length / inFeatures / heads;
  const half = d / 2;
  const out = new Float32Array(w.length);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const src = (h * d + j * half + i) * inFeatures;
        const dst = (h * d + 2 * i + j) * inFeatures;
        out.set(w.subarray(src, src + inFeatures), dst);
      }
    }
  }
  return out;
}

/** The llama.cpp architecture of each HF architecture this writer exports. */
const GGUF_ARCH: Record<string, 'llama' | 'qwen2' | 'qwen3'> = {
  LlamaForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
};

/** llama.cpp tensor names of the HF names the engine uses (`blk.N.*`). */
function ggufName(hf: string): string {
  const fixed: Record<string, string> = {
    'model.embed_tokens.weight': 'token_embd.weight',
    'model.norm.weight': 'output_norm.weight',
    'lm_head.weight': 'output.weight',
  };
  const direct = fixed[hf];
  if (direct) return direct;
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(hf);
  const layer: Record<string, string> = {
    'input_layernorm.weight': 'attn_norm.weight',
    'self_attn.q_proj.weight': 'attn_q.weight',
    'self_attn.k_proj.weight': 'attn_k.weight',
    'self_attn.v_proj.weight': 'attn_v.weight',
    'self_attn.o_proj.weight': 'attn_output.weight',
    'self_attn.q_proj.bias': 'attn_q.bias',
    'self_attn.k_proj.bias': 'attn_k.bias',
    'self_attn.v_proj.bias': 'attn_v.bias',
    'self_attn.q_norm.weight': 'attn_q_norm.weight',
    'self_attn.k_norm.weight': 'attn_k_norm.weight',
    'post_attention_layernorm.weight': 'ffn_norm.weight',
    'mlp.gate_proj.weight': 'ffn_gate.weight',
    'mlp.up_proj.weight': 'ffn_up.weight',
    'mlp.down_proj.weight': 'ffn_down.weight',
  };
  const suffix = m?.[2] ? layer[m[2]] : undefined;
  if (!m || !suffix)
    throw new EngineError('UNSUPPORTED_ARCHITECTURE', `gguf: no llama.cpp name for tensor ${hf}`);
  return `blk.${m[1]}.${suffix}`;
}

/**
 * The metadata and tensors of a GGUF file for `model` (fp32): Llama without biases as `llama`,
 * Qwen2 (q/k/v biases) as `qwen2`, Qwen3 (q/k norms) as `qwen3`. llama.cpp's Qwen architectures
 * rotate halves as HF does (NEOX RoPE), so only `llama` has its q/k rows permuted.
 */
export function ggufContents(
  model: Model,
  options: ExportGgufOptions = {},
): { metadata: [string, GgufValue][]; tensors: GgufTensor[] } {
  const s = model.shape;
  const hfArch = model.config.architectures[0] ?? '';
  const arch = GGUF_ARCH[hfArch];
  // llama.cpp's graphs for these have no o_proj bias, and only qwen2's has q/k/v biases.
  if (!arch || s.oBias || (arch !== 'qwen2' && s.qkvBias)) {
    throw new EngineError(
      'UNSUPPORTED_ARCHITECTURE',
      `gguf: ${hfArch}${s.oBias || s.qkvBias ? ' with attention_bias' : ''} does not export; LlamaForCausalLM without biases, Qwen2ForCausalLM and Qwen3ForCausalLM do`,
    );
  }
  const vocab = options.tokens
    ? {
        tokens: [...options.tokens],
        types: new Int32Array(s.vocab).fill(1),
        scores: new Float32Array(s.vocab),
      }
    : syntheticVocabulary(s.vocab);
  if (vocab.tokens.length !== s.vocab) {
    throw new EngineError(
      'INVALID_REQUEST',
      `gguf: options.tokens has ${vocab.tokens.length} entries for a vocabulary of ${s.vocab}`,
    );
  }
  const u32 = (value: number): GgufValue => ({ type: 'u32', value });
  const metadata: [string, GgufValue][] = [
    ['general.architecture', { type: 'string', value: arch }],
    ['general.name', { type: 'string', value: options.name ?? 'agentrl' }],
    ['general.alignment', u32(ALIGNMENT)],
    ['general.file_type', u32(0)], // LLAMA_FTYPE_ALL_F32
    [`${arch}.context_length`, u32(s.maxPositions)],
    [`${arch}.embedding_length`, u32(s.hidden)],
    [`${arch}.block_count`, u32(s.layers)],
    [`${arch}.feed_forward_length`, u32(s.intermediate)],
    [`${arch}.attention.head_count`, u32(s.heads)],
    [`${arch}.attention.head_count_kv`, u32(s.kvHeads)],
    [`${arch}.attention.key_length`, u32(s.headDim)],
    [`${arch}.attention.value_length`, u32(s.headDim)],
    [`${arch}.rope.dimension_count`, u32(s.headDim)],
    [`${arch}.rope.freq_base`, { type: 'f32', value: s.ropeTheta }],
    [`${arch}.attention.layer_norm_rms_epsilon`, { type: 'f32', value: s.eps }],
    [`${arch}.vocab_size`, u32(s.vocab)],
    ['tokenizer.ggml.model', { type: 'string', value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: 'array', of: 'string', value: vocab.tokens }],
    ['tokenizer.ggml.scores', { type: 'array', of: 'f32', value: vocab.scores }],
    ['tokenizer.ggml.token_type', { type: 'array', of: 'i32', value: vocab.types }],
    ['tokenizer.ggml.bos_token_id', u32(options.bos ?? 1)],
    ['tokenizer.ggml.eos_token_id', u32(options.eos ?? 2)],
    ['tokenizer.ggml.unknown_token_id', u32(0)],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: false }],
  ];
  const tensors = model.parameters().map((p): GgufTensor => {
    const name = ggufName(p.name);
    let data = p.data;
    if (arch !== 'llama') return { name, shape: p.shape, data };
    if (name.endsWith('attn_q.weight')) data = permuteRopeRows(p.data, s.heads, s.hidden);
    else if (name.endsWith('attn_k.weight')) data = permuteRopeRows(p.data, s.kvHeads, s.hidden);
    return { name, shape: p.shape, data };
  });
  return { metadata, tensors };
}

const enc = new TextEncoder();

/** Little-endian byte sink that grows as it is written. */
class Bytes {
  private buf = new Uint8Array(1 << 16);
  private view = new DataView(this.buf.buffer);
  length = 0;
  private room(n: number) {
    if (this.length + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  private put(n: number, write: (view: DataView, at: number) => void) {
    this.room(n);
    write(this.view, this.length);
    this.length += n;
  }
  u32(x: number) {
    this.put(4, (v, at) => v.setUint32(at, x, true));
  }
  i32(x: number) {
    this.put(4, (v, at) => v.setInt32(at, x, true));
  }
  f32(x: number) {
    this.put(4, (v, at) => v.setFloat32(at, x, true));
  }
  u64(x: number) {
    this.put(8, (v, at) => v.setBigUint64(at, BigInt(x), true));
  }
  u8(x: number) {
    this.room(1);
    this.buf[this.length++] = x;
  }
  str(s: string) {
    const b = enc.encode(s);
    this.u64(b.length);
    this.room(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

const SCALAR = {
  u32: GgufType.UINT32,
  i32: GgufType.INT32,
  f32: GgufType.FLOAT32,
  u64: GgufType.UINT64,
} as const;

function writeValue(out: Bytes, v: GgufValue): void {
  if (v.type === 'string') {
    out.u32(GgufType.STRING);
    out.str(v.value);
  } else if (v.type === 'bool') {
    out.u32(GgufType.BOOL);
    out.u8(v.value ? 1 : 0);
  } else if (v.type === 'array') {
    out.u32(GgufType.ARRAY);
    out.u32(v.of === 'string' ? GgufType.STRING : SCALAR[v.of]);
    out.u64(v.value.length);
    if (v.of === 'string') for (const s of v.value) out.str(s);
    else if (v.of === 'f32') for (let i = 0; i < v.value.length; i++) out.f32(v.value[i] as number);
    else for (let i = 0; i < v.value.length; i++) out.i32(v.value[i] as number);
  } else {
    out.u32(SCALAR[v.type]);
    if (v.type === 'u64') out.u64(v.value);
    else if (v.type === 'f32') out.f32(v.value);
    else if (v.type === 'i32') out.i32(v.value);
    else out.u32(v.value);
  }
}

const align = (n: number) => Math.ceil(n / ALIGNMENT) * ALIGNMENT;

/** Writes a GGUF v3 file: header, metadata, tensor infos, then the 32-byte aligned fp32 data. */
export function writeGguf(
  path: string,
  metadata: readonly [string, GgufValue][],
  tensors: readonly GgufTensor[],
): void {
  const head = new Bytes();
  head.u32(0x46554747); // "GGUF" read as a little-endian u32
  head.u32(3);
  head.u64(tensors.length);
  head.u64(metadata.length);
  for (const [key, value] of metadata) {
    head.str(key);
    writeValue(head, value);
  }
  let offset = 0;
  for (const t of tensors) {
    const numel = t.shape.reduce((a, b) => a * b, 1);
    if (numel !== t.data.length) {
      throw new EngineError(
        'INVALID_REQUEST',
        `gguf: tensor ${t.name} has shape [${t.shape}] but ${t.data.length} values`,
      );
    }
    head.str(t.name);
    head.u32(t.shape.length);
    for (const d of [...t.shape].reverse()) head.u64(d);
    head.u32(GGML_TYPE_F32);
    head.u64(offset);
    offset = align(offset + 4 * numel);
  }
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, head.bytes());
    writeSync(fd, new Uint8Array(align(head.length) - head.length));
    for (const t of tensors) {
      const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
      writeSync(fd, bytes);
      writeSync(fd, new Uint8Array(align(bytes.length) - bytes.length));
    }
  } finally {
    closeSync(fd);
  }
}

/** Exports `model` to `path` as an fp32 GGUF that llama.cpp loads (llama, qwen2 or qwen3). */
export function exportGguf(model: Model, path: string, options: ExportGgufOptions = {}): void {
  const { metadata, tensors } = ggufContents(model, options);
  writeGguf(path, metadata, tensors);
}
