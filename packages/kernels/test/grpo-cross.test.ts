import { aggregateLoss, lossGradientWeights } from '@agentrl/grpo';
import { describe, expect, it } from 'vitest';
import {
  type AggregationMode,
  aggregationWeights,
  parsePolicyLossConfig,
  policyLossSync,
  tokenMath,
} from '../src/index.js';
import { makeInputs } from './fixtures.js';

const MODES: AggregationMode[] = [
  'token-mean',
  'seq-mean-token-sum',
  'seq-mean-token-mean',
  'seq-mean-token-sum-norm',
];

describe("aggregation agrees with @agentrl/grpo's reference", () => {
  it.each(MODES)('%s: same weights and same aggregate', (mode) => {
    const inp = makeInputs({ seqLens: [5, 0, 9, 1, 6], V: 30, seed: 9, maskRate: 0.6 });
    inp.lossMask.fill(0, 14, 15); // one sequence with no loss token
    const horizon = mode === 'seq-mean-token-sum-norm' ? 40 : undefined;
    const cfg = parsePolicyLossConfig({ aggregation: mode, ...(horizon ? { horizon } : {}) });
    const ours = aggregationWeights(inp.lossMask, inp.cuSeqlens, cfg);
    const layout = { lossMask: inp.lossMask, cuSeqlens: inp.cuSeqlens };
    const theirs = lossGradientWeights(layout, { mode, ...(horizon ? { horizon } : {}) });
    for (let t = 0; t < ours.length; t++) expect(ours[t]).toBeCloseTo(theirs[t]!, 7);
    // the kernel's loss equals grpo's aggregate of the per-token surrogate losses
    const T = inp.targets.length;
    const perToken = new Float64Array(T);
    for (let t = 0; t < T; t++) {
      const single = { ...inp, lossMask: new Uint8Array(T), cuSeqlens: Int32Array.from([0, T]) };
      single.lossMask[t] = inp.lossMask[t]!;
      const logp = policyLossSync(inp, { backend: 'reference' }).logprobs;
      perToken[t] = tokenMath(
        parsePolicyLossConfig({ aggregation: 'seq-mean-token-sum' }),
        single,
        logp,
      ).loss;
    }
    const expected = aggregateLoss(perToken, layout, { mode, ...(horizon ? { horizon } : {}) });
    const got = policyLossSync(inp, {
      backend: 'cpu',
      aggregation: mode,
      ...(horizon ? { horizon } : {}),
    }).loss;
    expect(got).toBeCloseTo(expected, 6);
  });
});
