import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LossAggregationMode } from './config.js';
import { aggregateLoss, type LossLayout, lossGradientWeights } from './loss-aggregation.js';

// Two sequences: [a a b b] with mask [0 1 1 1], then [c c c] with mask [1 1 0].
const layout: LossLayout = { lossMask: [0, 1, 1, 1, 1, 1, 0], cuSeqlens: Int32Array.from([0, 4, 7]) };
const loss = [100, 1, 2, 3, 4, 6, Number.NaN]; // masked-out values never leak, NaN included

describe('aggregateLoss: worked example', () => {
  it.each([
    ['token-mean', (1 + 2 + 3 + 4 + 6) / 5],
    ['seq-mean-token-sum', (6 + 10) / 2],
    ['seq-mean-token-mean', (6 / 3 + 10 / 2) / 2],
    ['seq-mean-token-sum-norm', (6 + 10) / 8], // horizon 8: a sum over sequences, as verl does
  ] as const)('%s', (mode, want) => {
    expect(aggregateLoss(loss, layout, { mode, horizon: 8 })).toBeCloseTo(want, 12);
  });

  it('takes overridden denominators for micro-batches of a larger step', () => {
    expect(aggregateLoss(loss, layout, { mode: 'token-mean', tokenCount: 10 })).toBeCloseTo(16 / 10);
    expect(aggregateLoss(loss, layout, { mode: 'seq-mean-token-sum', seqCount: 4 })).toBeCloseTo(16 / 4);
  });

  it('gives 0 for a batch without loss tokens; an empty sequence counts in seq-mean-token-mean', () => {
    const empty: LossLayout = { lossMask: [0, 0], cuSeqlens: Int32Array.from([0, 2]) };
    expect(aggregateLoss([5, 5], empty, { mode: 'token-mean' })).toBe(0);
    const oneEmpty: LossLayout = { lossMask: [1, 1, 0], cuSeqlens: Int32Array.from([0, 2, 3]) };
    expect(aggregateLoss([2, 4, 9], oneEmpty, { mode: 'seq-mean-token-mean' })).toBe(1.5);
  });

  it('rejects bad layouts and a missing horizon, naming the field', () => {
    expect(() =>
      aggregateLoss([1, 2], { lossMask: [1, 1], cuSeqlens: Int32Array.from([0, 1]) }, { mode: 'token-mean' }),
    ).toThrow(/cuSeqlens/);
    expect(() =>
      aggregateLoss([1, 2], { lossMask: [1], cuSeqlens: Int32Array.from([0, 2]) }, { mode: 'token-mean' }),
    ).toThrow(/lossMask has 1/);
    expect(() =>
      aggregateLoss(
        [1, 2],
        { lossMask: [1, 1], cuSeqlens: Int32Array.from([0, 2, 1, 2]) },
        { mode: 'token-mean' },
      ),
    ).toThrow(/cuSeqlens decreases/);
    expect(() =>
      aggregateLoss(
        [1],
        { lossMask: [1], cuSeqlens: Int32Array.from([0, 1]) },
        { mode: 'seq-mean-token-sum-norm' },
      ),
    ).toThrow(/horizon/);
    expect(() =>
      aggregateLoss(
        [1],
        { lossMask: [1], cuSeqlens: Int32Array.from([0, 1]) },
        { mode: 'mean' as LossAggregationMode },
      ),
    ).toThrow(/mode/);
  });
});

const MODES: LossAggregationMode[] = [
  'token-mean',
  'seq-mean-token-sum',
  'seq-mean-token-mean',
  'seq-mean-token-sum-norm',
];
const batchArb = fc
  .array(
    fc.array(fc.record({ loss: fc.double({ min: -5, max: 5, noNaN: true }), mask: fc.constantFrom(0, 1) }), {
      maxLength: 12,
    }),
    { minLength: 1, maxLength: 6 },
  )
  .map((seqs) => {
    const flat = seqs.flat();
    const cu = [0];
    for (const s of seqs) cu.push(cu[cu.length - 1]! + s.length);
    return {
      loss: flat.map((x) => x.loss),
      layout: { lossMask: flat.map((x) => x.mask), cuSeqlens: Int32Array.from(cu) },
    };
  });

describe('lossGradientWeights', () => {
  it('are the exact derivative: aggregate = Σ w·loss and a nudge of one token moves it by w (property)', () => {
    fc.assert(
      fc.property(batchArb, fc.constantFrom(...MODES), fc.nat(), ({ loss, layout: l }, mode, pick) => {
        const opts = { mode, horizon: 16 };
        const w = lossGradientWeights(l, opts);
        const agg = aggregateLoss(loss, l, opts);
        const dot = loss.reduce((s, x, i) => s + (l.lossMask[i] === 1 ? x * w[i]! : 0), 0);
        expect(dot).toBeCloseTo(agg, 5);
        if (loss.length === 0) return;
        const i = pick % loss.length;
        const h = 1e-3;
        const nudged = loss.slice();
        nudged[i]! += h;
        expect((aggregateLoss(nudged, l, opts) - agg) / h).toBeCloseTo(w[i]!, 4);
        if (l.lossMask[i] === 0) expect(w[i]).toBe(0);
      }),
      { numRuns: 500 },
    );
  });

  it('matches the worked example, in float64 (the kernels multiply by these weights unrounded)', () => {
    const w = lossGradientWeights(layout, { mode: 'seq-mean-token-mean' });
    expect(w).toBeInstanceOf(Float64Array);
    expect(Array.from(w)).toEqual([0, 1 / 6, 1 / 6, 1 / 6, 1 / 4, 1 / 4, 0]);
  });
});
