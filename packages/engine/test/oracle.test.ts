import type * as TF from '@tensorflow/tfjs-core';
import { expect, it } from 'vitest';
import { packSequences } from '../src/batch.js';
import type { ModelConfigInput } from '../src/config.js';
import { createModel, type Model } from '../src/model.js';
import { createRng } from '../src/sampling.js';
import { describeEachCpuKernelPath, rel } from './helpers.js';
import { referenceCrossEntropy, referenceForward, tf } from './tfjs-reference.js';

await tf.setBackend('cpu');

const base = {
  vocab_size: 37,
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  head_dim: 8,
  rms_norm_eps: 1e-6,
  rope_theta: 10000,
  max_position_embeddings: 64,
  initializer_range: 0.2,
};

const cases: Array<{ name: string; config: ModelConfigInput }> = [
  {
    name: 'Llama, GQA (4 q / 2 kv heads), untied',
    config: { ...base, architectures: ['LlamaForCausalLM'], num_key_value_heads: 2 },
  },
  {
    name: 'Qwen3: q/k norm, tied embeddings, GQA 4/1',
    config: {
      ...base,
      architectures: ['Qwen3ForCausalLM'],
      num_key_value_heads: 1,
      tie_word_embeddings: true,
    },
  },
  {
    name: 'Qwen2: q/k/v bias',
    config: { ...base, architectures: ['Qwen2ForCausalLM'], num_key_value_heads: 2 },
  },
  {
    name: 'Llama with attention_bias (q/k/v/o bias), MHA',
    config: { ...base, architectures: ['LlamaForCausalLM'], num_key_value_heads: 4, attention_bias: true },
  },
];

/** Non-trivial norms and biases so their gradients and effects are exercised. */
function perturb(model: Model, seed: number): void {
  const r = createRng(seed);
  for (const p of model.parameters()) {
    if (p.shape.length === 1)
      for (let i = 0; i < p.data.length; i++)
        p.data[i] = (p.name.includes('norm') ? 1 : 0) + 0.3 * (r() - 0.5);
  }
}

let scope = 0;
/** tfjs variables of the model's parameters, keyed by HF name (tfjs names must be unique per run). */
function variables(model: Model): { P: Record<string, TF.Variable>; key: (name: string) => string } {
  const prefix = `s${scope++}/`;
  const P: Record<string, TF.Variable> = {};
  for (const p of model.parameters())
    P[p.name] = tf.variable(tf.tensor(Array.from(p.data), p.shape), true, prefix + p.name);
  return { P, key: (name) => prefix + name };
}

// against the tfjs oracle's tensors, relative to at least 1e-6
const relErr = (a: ArrayLike<number>, b: ArrayLike<number>) => rel(a, b, 1e-6);

const sequences = [
  [1, 5, 9, 2, 33, 7],
  [4, 4, 8, 15, 16, 23, 36, 0, 11, 12],
  [3, 30, 20],
];

describeEachCpuKernelPath('native engine vs an independent tfjs-core model', () => {
  for (const { name, config } of cases) {
    it(`${name}: logits, loss and every parameter gradient agree`, () => {
      const model = createModel(config, { seed: 7 });
      perturb(model, 11);
      const batch = packSequences(sequences);
      const T = batch.tokenIds.length;
      const mask = Array.from({ length: T }, (_, t) => (t % 4 === 1 ? 0 : 1));
      const logits = model.forwardLogits(batch);

      const { P, key } = variables(model);
      const tokens = Array.from(batch.tokenIds);
      const cu = Array.from(batch.cuSeqlens);
      const ref = referenceForward(model.shape, P, tokens, cu);
      expect(relErr(logits, ref.logits.dataSync())).toBeLessThan(2e-5);

      const targets = new Array<number>(T).fill(-1);
      for (let s = 0; s + 1 < cu.length; s++) {
        for (let t = (cu[s] ?? 0) + 1; t < (cu[s + 1] ?? 0); t++)
          if (mask[t]) targets[t - 1] = tokens[t] ?? 0;
      }
      const { value, grads } = tf.variableGrads(() =>
        referenceCrossEntropy(referenceForward(model.shape, P, tokens, cu).logits, targets),
      );

      model.zeroGrad();
      const { loss } = model.sftLoss(batch, mask);
      expect(Math.abs(loss - value.dataSync()[0]!) / Math.abs(loss)).toBeLessThan(1e-5);
      for (const p of model.parameters()) {
        const g = grads[key(p.name)];
        expect(g, p.name).toBeDefined();
        const err = relErr(p.grad, g!.dataSync());
        expect(err, `${p.name} gradient`).toBeLessThan(2e-5);
      }
      for (const v of Object.values(P)) v.dispose();
    });
  }

  it('backwardFromHidden (the fused-loss path) gives the same gradients as the reference', () => {
    const config = cases[1]!.config;
    const model = createModel(config, { seed: 3 });
    perturb(model, 5);
    const batch = packSequences(sequences);
    const { hidden } = model.forwardHidden(batch, { recompute: true });
    const r = createRng(9);
    const dHidden = Float32Array.from({ length: hidden.length }, () => r() - 0.5);
    const { P, key } = variables(model);
    const R = tf.tensor2d(dHidden, [batch.tokenIds.length, model.shape.hidden]);
    const { grads } = tf.variableGrads(
      () =>
        tf.sum(
          tf.mul(
            referenceForward(model.shape, P, Array.from(batch.tokenIds), Array.from(batch.cuSeqlens)).hidden,
            R,
          ),
        ) as TF.Scalar,
    );
    model.zeroGrad();
    const dLmHead = new Float32Array(model.shape.vocab * model.shape.hidden).fill(0.5);
    model.backwardFromHidden(dHidden, { dLmHead });
    for (const p of model.parameters()) {
      const expected = Float32Array.from(grads[key(p.name)]!.dataSync());
      if (p.name === 'model.embed_tokens.weight')
        for (let i = 0; i < expected.length; i++) expected[i] = (expected[i] ?? 0) + 0.5;
      expect(relErr(p.grad, expected), p.name).toBeLessThan(2e-5);
    }
  });
});
