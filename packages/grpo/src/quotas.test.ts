import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rocQuotas } from './quotas.js';

describe('rocQuotas: worked examples (n = 16 of N = 32 unless said, minimums 2 and 2)', () => {
  it.each([
    // positives, negatives, n, minPos, minNeg, kept positives, kept negatives
    [3, 29, 16, 2, 2, 2, 14], // the example: round(1.5) = 2 (half to even)
    [5, 27, 16, 2, 2, 2, 14], // round(2.5) = 2, not 3
    [7, 25, 16, 2, 2, 4, 12], // round(3.5) = 4
    [16, 16, 16, 2, 2, 8, 8],
    [1, 31, 16, 2, 2, 1, 15], // round(0.5) = 0, minimum takes the one positive there is
    [2, 30, 16, 2, 2, 2, 14], // round(1.0) = 1, raised to the minimum 2
    [31, 1, 16, 2, 2, 15, 1], // negatives: 16 - 16 = 0, raised to the one there is
    [30, 2, 16, 2, 2, 14, 2],
    [29, 3, 16, 2, 2, 14, 2], // round(14.5) = 14 positives, 2 negatives
    [0, 32, 16, 2, 2, 0, 16],
    [32, 0, 16, 2, 2, 16, 0],
    [1, 5, 3, 0, 0, 0, 3], // N = 6, n = 3: the reference's two quotas (0 and 2) miss n; here 0 + 3
    [4, 26, 16, 2, 2, 2, 14], // N = 30: round(2.13) = 2
    [1, 31, 16, 0, 0, 0, 16], // no minimums: round(0.5) = 0 positives
  ])('%i pos + %i neg, n=%i, min %i/%i -> %i pos, %i neg', (p, q, n, minP, minN, wantP, wantN) => {
    expect(rocQuotas(p, q, n, minP, minN)).toEqual({ positives: wantP, negatives: wantN });
  });
});

describe('rocQuotas: properties', () => {
  const arb = fc
    .record({
      N: fc.integer({ min: 2, max: 96 }),
      nFrac: fc.double({ min: 0, max: 1, noNaN: true }),
      posFrac: fc.double({ min: 0, max: 1, noNaN: true }),
      minP: fc.integer({ min: 0, max: 8 }),
      minN: fc.integer({ min: 0, max: 8 }),
    })
    .map(({ N, nFrac, posFrac, minP, minN }) => {
      const n = 1 + Math.floor(nFrac * (N - 2)); // 1 <= n < N
      const p = Math.round(posFrac * N);
      const minPositive = Math.min(minP, n);
      const minNegative = Math.min(minN, n - minPositive);
      return { p, q: N - p, n, minPositive, minNegative };
    });

  it('always add up to n, never exceed what the group has, and honour both minimums when available', () => {
    fc.assert(
      fc.property(arb, ({ p, q, n, minPositive, minNegative }) => {
        const r = rocQuotas(p, q, n, minPositive, minNegative);
        expect(r.positives + r.negatives).toBe(n);
        expect(r.positives).toBeGreaterThanOrEqual(0);
        expect(r.negatives).toBeGreaterThanOrEqual(0);
        expect(r.positives).toBeLessThanOrEqual(p);
        expect(r.negatives).toBeLessThanOrEqual(q);
        expect(r.positives).toBeGreaterThanOrEqual(Math.min(minPositive, p));
        expect(r.negatives).toBeGreaterThanOrEqual(Math.min(minNegative, q));
      }),
      { numRuns: 2000 },
    );
  });
});
