// onnx-proto is CommonJS whose named exports Node's ESM loader cannot detect: import the default.
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;

import { OnnxError, OnnxErrorCode } from './errors.js';
import { GraphBuilder } from './graph-builder.js';

/** The Hugging Face config fields the exporter reads (Llama / Qwen2 / Qwen3 decoders). */
export interface DecoderConfig {
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads?: number;
  head_dim?: number;
  rms_norm_eps?: number;
  rope_theta?: number;
  tie_word_embeddings?: boolean;
}

/** A decoder's weights by Hugging Face tensor name (`model.layers.0.self_attn.q_proj.weight`, ...). */
export interface DecoderWeights {
  config: DecoderConfig;
  /** The tensor, row-major as in safetensors; undefined when the model has no such tensor. */
  weight(name: string): Float32Array | undefined;
}

/** Shape facts of an exported decoder, for the ONNX adapter's KV cache. */
export interface DecoderShape {
  layers: number;
  kvHeads: number;
  headDim: number;
  vocab: number;
}

export function decoderShape(config: DecoderConfig): DecoderShape {
  return {
    layers: config.num_hidden_layers,
    kvHeads: config.num_key_value_heads ?? config.num_attention_heads,
    headDim: config.head_dim ?? config.hidden_size / config.num_attention_heads,
    vocab: config.vocab_size,
  };
}

const F = onnx.TensorProto.DataType.FLOAT;
const I64 = onnx.TensorProto.DataType.INT64;

/** What every piece of the graph needs: the builder, the weights, and the decoder's sizes. */
interface DecoderGraph {
  g: GraphBuilder;
  model: DecoderWeights;
  hidden: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  intermediate: number;
  /** The rms_norm_eps constant. */
  epsC: string;
}

/** The tensor `name`, or an error that names it. */
function need(model: DecoderWeights, name: string): Float32Array {
  const w = model.weight(name);
  if (!w)
    throw new OnnxError(OnnxErrorCode.INVALID_CONFIG, `onnx: the model has no tensor ${name} to export`);
  return w;
}

/** y = x · Wᵀ (+ b): weights stored transposed [in, out] so no Transpose node is needed. */
function linear(d: DecoderGraph, x: string, name: string, inDim: number, outDim: number): string {
  const { g, model } = d;
  const w = need(model, `${name}.weight`);
  const wt = new Float32Array(inDim * outDim);
  for (let o = 0; o < outDim; o++) for (let i = 0; i < inDim; i++) wt[i * outDim + o] = w[o * inDim + i]!;
  let y = g.op1('MatMul', [x, g.floats(`${name}.weight.T`, [inDim, outDim], wt)]);
  const b = model.weight(`${name}.bias`);
  if (b) y = g.op1('Add', [y, g.floats(`${name}.bias`, [outDim], b)]);
  return y;
}

function rmsNorm(d: DecoderGraph, x: string, weightName: string, dim: number): string {
  const { g } = d;
  const sq = g.op1('Mul', [x, x]);
  const mean = g.op1('ReduceMean', [sq], { axes: [-1], keepdims: 1 });
  const inv = g.op1('Reciprocal', [g.op1('Sqrt', [g.op1('Add', [mean, d.epsC])])]);
  return g.op1('Mul', [g.op1('Mul', [x, inv]), g.floats(weightName, [dim], need(d.model, weightName))]);
}

/** Rotate-half RoPE from position ids: emb = [p·inv_freq, p·inv_freq], shape [B, 1, S, D]. */
function ropeFrom(
  g: GraphBuilder,
  positionIds: string,
  headDim: number,
  theta: number,
): (x: string) => string {
  const half = headDim / 2;
  const invFreq = Float32Array.from({ length: half }, (_, i) => 1 / theta ** ((2 * i) / headDim));
  const pos = g.op1('Unsqueeze', [g.op1('Cast', [positionIds], { to: F }), g.ints([-1])]);
  const freqs = g.op1('Mul', [pos, g.floats('rope.inv_freq', [half], invFreq)]);
  const emb = g.op1('Unsqueeze', [g.op1('Concat', [freqs, freqs], { axis: -1 }), g.ints([1])]);
  const cos = g.op1('Cos', [emb]);
  const sin = g.op1('Sin', [emb]);
  const firstHalf = [g.ints([0]), g.ints([half]), g.ints([-1])];
  const secondHalf = [g.ints([half]), g.ints([headDim]), g.ints([-1])];
  return (x) => {
    const x1 = g.op1('Slice', [x, ...firstHalf]);
    const x2 = g.op1('Slice', [x, ...secondHalf]);
    const rotated = g.op1('Concat', [g.op1('Neg', [x2]), x1], { axis: -1 });
    return g.op1('Add', [g.op1('Mul', [x, cos]), g.op1('Mul', [rotated, sin])]);
  };
}

/** Mask [B, 1, 1, S, T]: key j is visible to query i (absolute position T-S+i) when j <= T-S+i and unpadded. */
function visibility(g: GraphBuilder, inputIds: string, attentionMask: string): string {
  const zero = g.ints([0], []);
  const one = g.ints([1], []);
  const total = g.op1('Gather', [g.op1('Shape', [attentionMask]), one], { axis: 0 });
  const seq = g.op1('Gather', [g.op1('Shape', [inputIds]), one], { axis: 0 });
  const rows = g.op1('Range', [g.op1('Sub', [total, seq]), total, one]);
  const cols = g.op1('Range', [zero, total, one]);
  const causal = g.op1('LessOrEqual', [
    g.op1('Unsqueeze', [cols, g.ints([0])]),
    g.op1('Unsqueeze', [rows, g.ints([1])]),
  ]);
  const padded = g.op1('Unsqueeze', [
    g.op1('Cast', [attentionMask], { to: onnx.TensorProto.DataType.BOOL }),
    g.ints([1, 2, 3]),
  ]);
  return g.op1('And', [causal, padded]);
}

/** What every layer's attention shares: RoPE, the visibility mask and two constants. */
interface AttentionShared {
  rope: (x: string) => string;
  visible: string;
  negInf: string;
  scale: string;
}

/**
 * Self-attention of layer `l` on the normed input `h`, with its KV cache: `present.{l}.*` are the
 * past keys/values with this step's appended. Grouped-query attention without copying K/V:
 * queries [B, kv, rep, S, D] against keys [B, kv, 1, T, D].
 */
function attention(
  d: DecoderGraph,
  a: AttentionShared,
  l: number,
  h: string,
  past: { key: string; value: string },
): string {
  const { g, model, hidden: H, heads, kvHeads, headDim } = d;
  const p = `model.layers.${l}`;
  const heads4 = (y: string, n: number, norm: string) => {
    let r = g.op1('Reshape', [y, g.ints([0, 0, n, headDim])]);
    if (model.weight(norm)) r = rmsNorm(d, r, norm, headDim);
    return g.op1('Transpose', [r], { perm: [0, 2, 1, 3] });
  };
  const q = a.rope(
    heads4(linear(d, h, `${p}.self_attn.q_proj`, H, heads * headDim), heads, `${p}.self_attn.q_norm.weight`),
  );
  const k = a.rope(
    heads4(
      linear(d, h, `${p}.self_attn.k_proj`, H, kvHeads * headDim),
      kvHeads,
      `${p}.self_attn.k_norm.weight`,
    ),
  );
  const v = heads4(linear(d, h, `${p}.self_attn.v_proj`, H, kvHeads * headDim), kvHeads, `${p}.no_v_norm`);
  const presentK = g.op1('Concat', [past.key, k], { axis: 2 }, `present.${l}.key`);
  const presentV = g.op1('Concat', [past.value, v], { axis: 2 }, `present.${l}.value`);
  g.output(`present.${l}.key`, F, ['batch_size', kvHeads, 'total_sequence_length', headDim]);
  g.output(`present.${l}.value`, F, ['batch_size', kvHeads, 'total_sequence_length', headDim]);
  const q5 = g.op1('Reshape', [q, g.ints([0, kvHeads, heads / kvHeads, -1, headDim])]);
  const k5 = g.op1('Unsqueeze', [presentK, g.ints([2])]);
  const v5 = g.op1('Unsqueeze', [presentV, g.ints([2])]);
  const scores = g.op1('Mul', [
    g.op1('MatMul', [q5, g.op1('Transpose', [k5], { perm: [0, 1, 2, 4, 3] })]),
    a.scale,
  ]);
  const probs = g.op1('Softmax', [g.op1('Where', [a.visible, scores, a.negInf])], { axis: -1 });
  const ctx5 = g.op1('MatMul', [probs, v5]);
  const ctx = g.op1('Reshape', [
    g.op1('Transpose', [g.op1('Reshape', [ctx5, g.ints([0, heads, -1, headDim])])], { perm: [0, 2, 1, 3] }),
    g.ints([0, 0, heads * headDim]),
  ]);
  return linear(d, ctx, `${p}.self_attn.o_proj`, heads * headDim, H);
}

/** One decoder layer: pre-norm attention and SwiGLU MLP, each with its residual. */
function decoderLayer(
  d: DecoderGraph,
  a: AttentionShared,
  l: number,
  x: string,
  past: { key: string; value: string },
): string {
  const { g, hidden: H, intermediate } = d;
  const p = `model.layers.${l}`;
  const h = rmsNorm(d, x, `${p}.input_layernorm.weight`, H);
  const attended = g.op1('Add', [x, attention(d, a, l, h, past)]);
  const h2 = rmsNorm(d, attended, `${p}.post_attention_layernorm.weight`, H);
  const gate = linear(d, h2, `${p}.mlp.gate_proj`, H, intermediate);
  const up = linear(d, h2, `${p}.mlp.up_proj`, H, intermediate);
  const act = g.op1('Mul', [g.op1('Mul', [gate, g.op1('Sigmoid', [gate])]), up]);
  return g.op1('Add', [attended, linear(d, act, `${p}.mlp.down_proj`, intermediate, H)]);
}

/**
 * Writes a Llama/Qwen decoder as an ONNX model in the Hugging Face (Optimum) layout with past key
 * values: inputs `input_ids`, `attention_mask`, `position_ids`, `past_key_values.{i}.key|value`
 * ([batch, kv_heads, past, head_dim]); outputs `logits` and `present.{i}.key|value`. Built from
 * plain opset-15 operators (RMSNorm, rotate-half RoPE, grouped-query attention by broadcasting, SwiGLU),
 * so any ONNX Runtime backend runs it. Q/K/V biases and Qwen3's per-head q/k norms are exported
 * when the weights have them.
 */
export function exportDecoderToOnnx(model: DecoderWeights): Uint8Array {
  const c = model.config;
  const { layers, kvHeads, headDim, vocab } = decoderShape(c);
  const H = c.hidden_size;
  if (c.num_attention_heads % kvHeads !== 0 || headDim % 2 !== 0) {
    throw new OnnxError(
      OnnxErrorCode.INVALID_CONFIG,
      'onnx: heads must be a multiple of kv heads and head_dim even to export',
    );
  }
  const g = new GraphBuilder();
  const d: DecoderGraph = {
    g,
    model,
    hidden: H,
    heads: c.num_attention_heads,
    kvHeads,
    headDim,
    intermediate: c.intermediate_size,
    epsC: g.scalar(c.rms_norm_eps ?? 1e-6),
  };
  const inputIds = g.input('input_ids', I64, ['batch_size', 'sequence_length']);
  const attentionMask = g.input('attention_mask', I64, ['batch_size', 'total_sequence_length']);
  const positionIds = g.input('position_ids', I64, ['batch_size', 'sequence_length']);
  const past = Array.from({ length: layers }, (_, l) => ({
    key: g.input(`past_key_values.${l}.key`, F, ['batch_size', kvHeads, 'past_sequence_length', headDim]),
    value: g.input(`past_key_values.${l}.value`, F, ['batch_size', kvHeads, 'past_sequence_length', headDim]),
  }));
  const rope = ropeFrom(g, positionIds, headDim, c.rope_theta ?? 10000);
  const visible = visibility(g, inputIds, attentionMask);
  const shared: AttentionShared = {
    rope,
    visible,
    negInf: g.scalar(-1e30),
    scale: g.scalar(1 / Math.sqrt(headDim)),
  };
  let x = g.op1(
    'Gather',
    [g.floats('model.embed_tokens.weight', [vocab, H], need(model, 'model.embed_tokens.weight')), inputIds],
    { axis: 0 },
  );
  for (let l = 0; l < layers; l++) x = decoderLayer(d, shared, l, x, past[l]!);
  const final = rmsNorm(d, x, 'model.norm.weight', H);
  const lmHeadName =
    model.weight('lm_head.weight') && !c.tie_word_embeddings ? 'lm_head' : 'model.embed_tokens';
  g.op1('Identity', [linearNamed(g, final, model, lmHeadName, H, vocab)], {}, 'logits');
  g.output('logits', F, ['batch_size', 'sequence_length', vocab]);
  return g.build('agentrl_decoder');
}

/** lm_head, possibly tied to the embedding: x · Wᵀ with W [vocab, hidden]. */
function linearNamed(
  g: GraphBuilder,
  x: string,
  model: DecoderWeights,
  name: string,
  inDim: number,
  outDim: number,
) {
  const w = model.weight(`${name}.weight`)!;
  const wt = new Float32Array(inDim * outDim);
  for (let o = 0; o < outDim; o++) for (let i = 0; i < inDim; i++) wt[i * outDim + o] = w[o * inDim + i]!;
  return g.op1('MatMul', [x, g.floats(`lm_head.weight.T`, [inDim, outDim], wt)]);
}
