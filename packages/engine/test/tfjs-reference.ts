// An independent implementation of the same decoder in @tensorflow/tfjs-core (CPU backend), written
// from the Hugging Face modeling code, used as the oracle for logits and gradients.
// Runs under vitest (Vite resolves the ESM build's directory imports, which plain Node refuses);
// the ESM build needs the gradients registered explicitly.
import '@tensorflow/tfjs-backend-cpu';
import '@tensorflow/tfjs-core/dist/register_all_gradients.js';
import type * as TF from '@tensorflow/tfjs-core';
import * as tf from '@tensorflow/tfjs-core';

import type { NativeModelConfig } from '../src/config.js';

export { tf };

function rmsNorm(x: TF.Tensor, w: TF.Tensor, eps: number): TF.Tensor {
  const ms = tf.mean(tf.square(x), -1, true);
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(ms, eps))), w);
}

function rope(x: TF.Tensor3D, pos: number[], d: number, theta: number): TF.Tensor3D {
  const half = d / 2;
  const inv = Array.from({ length: half }, (_, i) => Math.fround(1 / theta ** ((2 * i) / d)));
  const ang = pos.map((p) => inv.map((f) => Math.fround(p * f)));
  const cos = tf.expandDims(tf.tensor2d(ang.map((r) => r.map(Math.cos))), 1);
  const sin = tf.expandDims(tf.tensor2d(ang.map((r) => r.map(Math.sin))), 1);
  const [x1, x2] = tf.split(x, 2, -1) as [TF.Tensor3D, TF.Tensor3D];
  return tf.concat(
    [tf.sub(tf.mul(x1, cos), tf.mul(x2, sin)), tf.add(tf.mul(x2, cos), tf.mul(x1, sin))],
    -1,
  ) as TF.Tensor3D;
}

function linear(x: TF.Tensor2D, w: TF.Tensor, b?: TF.Tensor): TF.Tensor2D {
  const y = tf.matMul(x, w as TF.Tensor2D, false, true) as TF.Tensor2D;
  return b ? (tf.add(y, b) as TF.Tensor2D) : y;
}

/** Hidden states (after the final norm) and logits of a packed batch. */
export function referenceForward(
  c: NativeModelConfig,
  P: Record<string, TF.Tensor>,
  tokens: number[],
  cu: number[],
): { hidden: TF.Tensor2D; logits: TF.Tensor2D } {
  const get = (n: string) => {
    const t = P[n];
    if (!t) throw new Error(`missing ${n}`);
    return t;
  };
  const T = tokens.length;
  const d = c.headDim;
  const group = c.heads / c.kvHeads;
  const pos: number[] = [];
  for (let s = 0; s + 1 < cu.length; s++)
    for (let t = cu[s] ?? 0; t < (cu[s + 1] ?? 0); t++) pos.push(t - (cu[s] ?? 0));
  let x = tf.gather(get('model.embed_tokens.weight'), tf.tensor1d(tokens, 'int32')) as TF.Tensor2D;
  for (let l = 0; l < c.layers; l++) {
    const p = (n: string) => P[`model.layers.${l}.${n}`];
    const xn = rmsNorm(x, get(`model.layers.${l}.input_layernorm.weight`), c.eps) as TF.Tensor2D;
    let q = tf.reshape(
      linear(xn, get(`model.layers.${l}.self_attn.q_proj.weight`), p('self_attn.q_proj.bias')),
      [T, c.heads, d],
    ) as TF.Tensor3D;
    let k = tf.reshape(
      linear(xn, get(`model.layers.${l}.self_attn.k_proj.weight`), p('self_attn.k_proj.bias')),
      [T, c.kvHeads, d],
    ) as TF.Tensor3D;
    const v = tf.reshape(
      linear(xn, get(`model.layers.${l}.self_attn.v_proj.weight`), p('self_attn.v_proj.bias')),
      [T, c.kvHeads, d],
    ) as TF.Tensor3D;
    if (c.qkNorm) {
      q = rmsNorm(q, get(`model.layers.${l}.self_attn.q_norm.weight`), c.eps) as TF.Tensor3D;
      k = rmsNorm(k, get(`model.layers.${l}.self_attn.k_norm.weight`), c.eps) as TF.Tensor3D;
    }
    q = rope(q, pos, d, c.ropeTheta);
    k = rope(k, pos, d, c.ropeTheta);
    const headToKv = tf.tensor1d(
      Array.from({ length: c.heads }, (_, h) => Math.floor(h / group)),
      'int32',
    );
    const outs: TF.Tensor2D[] = [];
    for (let s = 0; s + 1 < cu.length; s++) {
      const b = cu[s] ?? 0;
      const L = (cu[s + 1] ?? 0) - b;
      const qs = tf.transpose(tf.slice(q, [b, 0, 0], [L, -1, -1]), [1, 0, 2]);
      const ks = tf.gather(tf.transpose(tf.slice(k, [b, 0, 0], [L, -1, -1]), [1, 0, 2]), headToKv);
      const vs = tf.gather(tf.transpose(tf.slice(v, [b, 0, 0], [L, -1, -1]), [1, 0, 2]), headToKv);
      const mask = tf.tensor2d(
        Array.from({ length: L }, (_, i) => Array.from({ length: L }, (_, j) => (j <= i ? 0 : -1e9))),
      );
      const scores = tf.add(tf.mul(tf.matMul(qs, ks, false, true), 1 / Math.sqrt(d)), mask);
      const o = tf.matMul(tf.softmax(scores), vs);
      outs.push(tf.reshape(tf.transpose(o, [1, 0, 2]), [L, c.heads * d]) as TF.Tensor2D);
    }
    const att = tf.concat(outs, 0);
    x = tf.add(x, linear(att, get(`model.layers.${l}.self_attn.o_proj.weight`), p('self_attn.o_proj.bias')));
    const xn2 = rmsNorm(x, get(`model.layers.${l}.post_attention_layernorm.weight`), c.eps) as TF.Tensor2D;
    const g = linear(xn2, get(`model.layers.${l}.mlp.gate_proj.weight`));
    const u = linear(xn2, get(`model.layers.${l}.mlp.up_proj.weight`));
    const act = tf.mul(tf.mul(g, tf.sigmoid(g)), u) as TF.Tensor2D;
    x = tf.add(x, linear(act, get(`model.layers.${l}.mlp.down_proj.weight`)));
  }
  const hidden = rmsNorm(x, get('model.norm.weight'), c.eps) as TF.Tensor2D;
  const lm = c.tied ? get('model.embed_tokens.weight') : get('lm_head.weight');
  return { hidden, logits: linear(hidden, lm) };
}

/** Mean next-token cross-entropy over targets[t] >= 0 (target of row t), as Model.sftLoss computes it. */
export function referenceCrossEntropy(logits: TF.Tensor2D, targets: number[]): TF.Scalar {
  const rows = targets.map((t, i) => (t >= 0 ? i : -1)).filter((i) => i >= 0);
  const picked = tf.gather(logits, tf.tensor1d(rows, 'int32'));
  const logp = tf.logSoftmax(picked);
  const onehot = tf.oneHot(
    tf.tensor1d(
      rows.map((r) => targets[r] ?? 0),
      'int32',
    ),
    logits.shape[1],
  );
  return tf.div(tf.neg(tf.sum(tf.mul(logp, onehot))), rows.length) as TF.Scalar;
}
