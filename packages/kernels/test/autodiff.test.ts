import { lossGradientWeights } from '@agentrl/grpo';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
// tfjs-core ships kernels' gradients separately; the full tfjs bundle registers them, core alone does not.
import '@tensorflow/tfjs-core/dist/register_all_gradients.js';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type PolicyLossConfigInput,
  type PolicyLossInputs,
  parsePolicyLossConfig,
  policyLossSync,
  referenceFusedLinear,
} from '../src/index.js';
import { aggregationOptions } from '../src/reference/token-math.js';
import { relMaxError } from './compare.js';
import { makeFusedInputs, makeInputs } from './fixtures.js';

beforeAll(async () => {
  await tf.setBackend('cpu');
});

/**
 * The same loss written the way verl writes it (max/min/where over clipped surrogates, torch-style
 * clamp), in tfjs with its autodiff; weights from @agentrl/grpo. Independent of the reference's
 * case analysis.
 */
function tfjsLossAndGrad(
  inp: PolicyLossInputs,
  options: PolicyLossConfigInput,
): { loss: number; grad: Float32Array } {
  const cfg = parsePolicyLossConfig(options);
  const T = inp.targets.length;
  const V = inp.vocabSize;
  const S = inp.cuSeqlens.length - 1;
  const w = lossGradientWeights(
    { lossMask: inp.lossMask, cuSeqlens: inp.cuSeqlens },
    aggregationOptions(cfg),
  );
  const seqMean = new Float32Array(S * T);
  const seqOf = new Int32Array(T);
  for (let s = 0; s < S; s++) {
    let n = 0;
    for (let t = inp.cuSeqlens[s]!; t < inp.cuSeqlens[s + 1]!; t++) n += inp.lossMask[t]!;
    for (let t = inp.cuSeqlens[s]!; t < inp.cuSeqlens[s + 1]!; t++) {
      seqOf[t] = s;
      if (inp.lossMask[t]) seqMean[s * T + t] = 1 / n;
    }
  }
  const M = cfg.maxLogRatio;
  const f = (logits: tf.Tensor): tf.Scalar => {
    const lsm = tf.logSoftmax(tf.div(logits, cfg.temperature));
    const onehot = tf.cast(tf.oneHot(tf.tensor1d(inp.targets, 'int32'), V), 'float32');
    const logp = tf.sum(tf.mul(lsm, onehot), 1);
    const raw = tf.sub(logp, tf.tensor1d(inp.oldLogprobs));
    let ratio: tf.Tensor;
    if (cfg.ratioLevel === 'token') {
      ratio = tf.exp(tf.clipByValue(raw, -M, M));
    } else {
      const maskedRaw = tf.mul(raw, tf.tensor1d(Float32Array.from(inp.lossMask)));
      const seqLr = tf.matMul(tf.tensor2d(seqMean, [S, T]), tf.reshape(maskedRaw, [T, 1]));
      ratio = tf.gather(tf.reshape(tf.exp(tf.clipByValue(seqLr, -M, M)), [S]), tf.tensor1d(seqOf, 'int32'));
    }
    const adv = tf.tensor1d(inp.advantages);
    const negA = tf.neg(adv);
    const pg1 = tf.mul(negA, ratio);
    const pg2 = tf.mul(negA, tf.clipByValue(ratio, 1 - cfg.clipLow, 1 + cfg.clipHigh));
    const clip1 = tf.maximum(pg1, pg2);
    let loss = clip1;
    if (cfg.dualClip !== null) {
      const pg3 = tf.mul(negA, cfg.dualClip);
      loss = tf.where(tf.less(adv, 0), tf.minimum(pg3, clip1), clip1);
    }
    return tf.sum(tf.mul(loss, tf.tensor1d(Float32Array.from(w))));
  };
  const x = tf.tensor2d(inp.logits as Float32Array, [T, V]);
  const { value, grad } = tf.valueAndGrad(f)(x);
  const out = { loss: value.dataSync()[0]!, grad: grad.dataSync() as Float32Array };
  tf.dispose([x, value, grad]);
  return out;
}

const CONFIGS: PolicyLossConfigInput[] = [
  {},
  { aggregation: 'seq-mean-token-sum' },
  { aggregation: 'seq-mean-token-mean', temperature: 0.7 },
  { aggregation: 'seq-mean-token-sum-norm', horizon: 50 },
  { ratioLevel: 'sequence' },
  { ratioLevel: 'sequence', aggregation: 'seq-mean-token-mean', temperature: 1.4 },
  { dualClip: null, clipLow: 0.05, clipHigh: 0.05 },
  { maxLogRatio: 0.2 },
];

describe('reference gradient vs tfjs-core autodiff (verl-style formulation)', () => {
  it.each(CONFIGS.map((c, i) => [JSON.stringify(c), c, i] as const))('config %s', (_n, cfg, i) => {
    const inp = makeInputs({ seqLens: [6, 1, 9, 4], V: 53, seed: 500 + i, drift: 0.6 });
    const ref = policyLossSync(inp, { ...cfg, backend: 'reference' });
    const tfr = tfjsLossAndGrad(inp, cfg);
    expect(Math.abs(ref.loss - tfr.loss)).toBeLessThan(1e-5 * Math.max(1, Math.abs(ref.loss)));
    expect(relMaxError(ref.dlogits, tfr.grad)).toBeLessThan(1e-4);
    // the case must exercise clipping, or the check is weaker than it looks
    if (i === 0) expect(ref.metrics.clipFracLow + ref.metrics.clipFracHigh).toBeGreaterThan(0);
  });
});

describe('reference gradient vs finite differences', () => {
  const lossOf = (inp: PolicyLossInputs, cfg: PolicyLossConfigInput) =>
    policyLossSync(inp, { ...cfg, backend: 'reference' });

  it('matches central differences away from clip kinks (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.constantFrom<PolicyLossConfigInput>(...CONFIGS),
        fc.integer({ min: 1, max: 40 }),
        (seed, cfg, V) => {
          const inp = makeInputs({ seqLens: [3, 4], V, seed, drift: 0.5 });
          const base = lossOf(inp, cfg);
          const eps = 1e-2;
          for (let k = 0; k < 6; k++) {
            const i = (seed * 7919 + k * 104729) % inp.logits.length;
            const x0 = inp.logits[i]!;
            inp.logits[i] = x0 + eps;
            const up = lossOf(inp, cfg);
            inp.logits[i] = x0 - eps;
            const down = lossOf(inp, cfg);
            inp.logits[i] = x0;
            const kink = ['clipFracLow', 'clipFracHigh', 'clipFracDual'].some(
              (m) => up.metrics[m as 'clipFracLow'] !== down.metrics[m as 'clipFracLow'],
            );
            if (kink) continue;
            const fd = (up.loss - down.loss) / (2 * eps);
            const an = base.dlogits[i]!;
            if (Math.abs(fd - an) > 1e-6 + 2e-3 * Math.abs(an) + 1e-3 * Math.abs(base.loss) * eps)
              return false;
          }
          return true;
        },
      ),
      { numRuns: 60, seed: 42 },
    );
  });

  it('fused-linear reference: dHidden and dWeight match central differences', () => {
    const inp = makeFusedInputs({ seqLens: [3, 2], V: 11, H: 5, seed: 77, drift: 0.05 });
    const cfg = { aggregation: 'seq-mean-token-mean' } as const;
    const base = referenceFusedLinear(inp, parsePolicyLossConfig(cfg));
    const eps = 1e-2;
    for (const [arr, grad] of [
      [inp.hidden, base.dHidden],
      [inp.weight, base.dWeight],
    ] as const) {
      for (let i = 0; i < arr.length; i += 3) {
        const x0 = arr[i]!;
        arr[i] = x0 + eps;
        const up = referenceFusedLinear(inp, parsePolicyLossConfig(cfg)).loss;
        arr[i] = x0 - eps;
        const down = referenceFusedLinear(inp, parsePolicyLossConfig(cfg)).loss;
        arr[i] = x0;
        expect(Math.abs((up - down) / (2 * eps) - grad[i]!)).toBeLessThan(1e-5 + 2e-3 * Math.abs(grad[i]!));
      }
    }
  });
});
