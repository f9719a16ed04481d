import { aggregateLoss, lossGradientWeights } from '@agentrl/grpo';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type Backend,
  disposeWebGpu,
  listBackends,
  type PolicyLossInputs,
  type PolicyLossOptions,
  parsePolicyLossConfig,
  policyLoss,
} from '../src/index.js';
import { aggregationOptions } from '../src/reference/token-math.js';
import { makeInputs } from './fixtures.js';

// The aggregation weights have one TS source, @agentrl/grpo's lossGradientWeights (the reference
// and WebGPU backends call it). The native kernels compute them again in C++
// (native/src/kernels/token_math.h): this reads each kernel's weights back out of its gradient and
// checks them, token by token, against that one source.

const backends = await listBackends();
const runnable = (name: Backend) => backends.find((b) => b.name === name)?.runnable === true;
afterAll(() => disposeWebGpu());

const CASES: PolicyLossOptions[] = [
  { aggregation: 'token-mean' },
  { aggregation: 'seq-mean-token-sum' },
  { aggregation: 'seq-mean-token-mean' },
  { aggregation: 'seq-mean-token-sum-norm', horizon: 40 },
  { aggregation: 'token-mean', tokenCount: 50 },
  { aggregation: 'seq-mean-token-mean', seqCount: 9 },
];

/** Packed inputs with an empty sequence and one whose only token is masked out; ratios near 1. */
function inputs(): PolicyLossInputs & { logits: Float32Array } {
  const inp = makeInputs({ seqLens: [5, 0, 9, 1, 6], V: 30, seed: 9, maskRate: 0.7, drift: 0.02 });
  inp.lossMask.fill(0, 14, 15);
  return inp;
}

/** Token t alone in the loss (one sequence, token-mean over one token: weight 1): its unweighted row. */
async function alone(inp: PolicyLossInputs, t: number): Promise<{ row: Float64Array; loss: number }> {
  const T = inp.targets.length;
  const lossMask = new Uint8Array(T);
  lossMask[t] = 1;
  const one = await policyLoss(
    { ...inp, lossMask, cuSeqlens: Int32Array.from([0, T]) },
    { backend: 'reference' },
  );
  const V = inp.vocabSize;
  return { row: Float64Array.from(one.dlogits.subarray(t * V, (t + 1) * V)), loss: one.loss };
}

describe.each(['cpu', 'webgpu', 'cuda', 'hip'] as const)(
  'aggregation weights of the %s kernel',
  (backend) => {
    const skip = !runnable(backend);

    it.skipIf(skip).each(CASES)(`are lossGradientWeights' for %o`, async (options) => {
      const inp = inputs();
      const T = inp.targets.length;
      const V = inp.vocabSize;
      const want = lossGradientWeights(
        { lossMask: inp.lossMask, cuSeqlens: inp.cuSeqlens },
        aggregationOptions(parsePolicyLossConfig(options)),
      );
      const got = await policyLoss(inp, { ...options, backend });
      let checked = 0;
      const perToken = new Float64Array(T);
      for (let t = 0; t < T; t++) {
        const row = got.dlogits.subarray(t * V, (t + 1) * V);
        if (inp.lossMask[t] !== 1) {
          expect(row.every((x) => x === 0)).toBe(true);
          continue;
        }
        const unit = await alone(inp, t);
        perToken[t] = unit.loss;
        let dot = 0;
        let norm = 0;
        for (let j = 0; j < V; j++) {
          dot += row[j]! * unit.row[j]!;
          norm += unit.row[j]! ** 2;
        }
        if (norm < 1e-12) continue; // a clipped token: no gradient, no weight to read
        expect(dot / norm / want[t]!).toBeCloseTo(1, 5);
        checked++;
      }
      expect(checked).toBeGreaterThan(8);
      // and the loss is grpo's aggregate of the per-token losses
      const layout = { lossMask: inp.lossMask, cuSeqlens: inp.cuSeqlens };
      const expected = aggregateLoss(perToken, layout, aggregationOptions(parsePolicyLossConfig(options)));
      expect(got.loss).toBeCloseTo(expected, 6);
    });
  },
);
