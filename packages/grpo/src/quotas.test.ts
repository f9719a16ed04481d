import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GrpoError } from './errors.js';
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
    [31, 1, 16, 2, 2, 15, 1], // negatives: round(0.5) = 0, raised to the one there is
    [30, 2, 16, 2, 2, 14, 2],
    [29, 3, 16, 2, 2, 14, 2], // round(14.5) = 14 positives, 2 negatives
    [0, 32, 16, 2, 2, 0, 16],
    [32, 0, 16, 2, 2, 16, 0],
    [1, 5, 3, 0, 0, 0, 3], // N = 6, n = 3: round(0.5) = 0 positives, at the minimum 0: 3 negatives
    [1, 5, 3, 0, 2, 1, 2], // issue 14: negatives round(2.5) = 2, at the minimum 2: positives 3 - 2
    [4, 26, 16, 2, 2, 2, 14], // N = 30: round(2.13) = 2
    [1, 31, 16, 0, 0, 0, 16], // no minimums: round(0.5) = 0 positives
  ])('%i pos + %i neg, n=%i, min %i/%i -> %i pos, %i neg', (p, q, n, minP, minN, wantP, wantN) => {
    expect(rocQuotas(p, q, n, minP, minN)).toEqual({ positives: wantP, negatives: wantN, fallback: false });
  });

  it.each([
    // where the reference's assertion fails: negatives become n - positives
    [3, 3, 3, 0, 0, 2, 1], // round(1.5) = 2 and 2: 4 kept, not 3
    [5, 5, 5, 0, 0, 2, 3], // round(2.5) = 2 and 2: 4 kept, not 5
  ])(
    '%i pos + %i neg, n=%i, min %i/%i: the reference asserts; sum-to-n gives %i + %i',
    (p, q, n, minP, minN, wantP, wantN) => {
      expect(rocQuotas(p, q, n, minP, minN)).toEqual({ positives: wantP, negatives: wantN, fallback: true });
    },
  );

  it('refuses minimums that add up to more than n', () => {
    expect(() => rocQuotas(3, 5, 4, 3, 2)).toThrow(GrpoError);
    expect(() => rocQuotas(3, 5, 4, 3, 2)).toThrow(/3 \+ 2, more than n = 4/);
  });
});

/** Python's `round` on a float: half to even. */
function pyRound(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** Python's `len(xs[:k])` for a list of length len. */
function sliceLength(len: number, k: number): number {
  return k >= 0 ? Math.min(k, len) : Math.max(len + k, 0);
}

type ReferenceOutcome =
  | { kind: 'kept'; positives: number; negatives: number }
  | { kind: 'assertion_fails' }
  | { kind: 'keeps_whole_group' };

/**
 * A line-by-line transcription of the quota arithmetic of rStar2-Agent's `resample_of_correct`
 * (volcengine/verl, recipe/rstar2_agent/src/down_sample/roc.py), floats and all.
 */
function reference(P: number, Q: number, n: number, minP: number, minN: number): ReferenceOutcome {
  const N = P + Q;
  let zero = pyRound((Q * n) / N);
  let nonZero = pyRound((P * n) / N);
  if (zero < minN && nonZero < minP) return { kind: 'keeps_whole_group' };
  if (zero <= Math.min(minN, Q)) {
    zero = Math.min(minN, Q);
    nonZero = n - zero;
  }
  if (nonZero <= Math.min(minP, P)) {
    nonZero = Math.min(minP, P);
    zero = n - nonZero;
  }
  const positives = sliceLength(P, nonZero);
  const negatives = sliceLength(Q, zero);
  if (positives + negatives !== n) return { kind: 'assertion_fails' };
  return { kind: 'kept', positives, negatives };
}

/** Checks one split; returns the reference's outcome kind. */
function check(P: number, Q: number, n: number, minP: number, minN: number): ReferenceOutcome['kind'] {
  const ref = reference(P, Q, n, minP, minN);
  const got = rocQuotas(P, Q, n, minP, minN);
  expect(ref.kind).not.toBe('keeps_whole_group'); // unreachable while minP + minN <= n
  if (ref.kind === 'kept') {
    expect(got).toEqual({ positives: ref.positives, negatives: ref.negatives, fallback: false });
  } else {
    expect(got.fallback).toBe(true);
  }
  expect(got.positives + got.negatives).toBe(n);
  expect(got.positives).toBeGreaterThanOrEqual(Math.min(minP, P));
  expect(got.negatives).toBeGreaterThanOrEqual(Math.min(minN, Q));
  expect(got.positives).toBeLessThanOrEqual(P);
  expect(got.negatives).toBeLessThanOrEqual(Q);
  return ref.kind;
}

describe('rocQuotas against a transcription of the reference', () => {
  it('agrees wherever the reference answers, every split with N <= 32; sums to n where it asserts', () => {
    const counts = { kept: 0, assertion_fails: 0, keeps_whole_group: 0 };
    for (let N = 2; N <= 32; N++)
      for (let n = 1; n < N; n++)
        for (let P = 0; P <= N; P++)
          for (let minP = 0; minP <= n; minP++)
            for (let minN = 0; minP + minN <= n; minN++) {
              const r = reference(P, N - P, n, minP, minN);
              const got = rocQuotas(P, N - P, n, minP, minN);
              // expect() per case is slow over ~1.5M cases: check cheaply, call check() on a miss
              const ok =
                r.kind === 'kept'
                  ? !got.fallback && got.positives === r.positives && got.negatives === r.negatives
                  : r.kind === 'assertion_fails' &&
                    got.fallback &&
                    got.positives + got.negatives === n &&
                    got.positives <= P &&
                    got.negatives <= N - P &&
                    got.positives >= Math.min(minP, P) &&
                    got.negatives >= Math.min(minN, N - P);
              if (!ok) check(P, N - P, n, minP, minN);
              counts[r.kind]++;
            }
    expect(counts.keeps_whole_group).toBe(0);
    expect(counts.assertion_fails).toBeGreaterThan(0);
    expect(counts.kept).toBeGreaterThan(100 * counts.assertion_fails);
  });

  it('agrees on large groups (N up to 512) and any valid minimums', () => {
    const arb = fc
      .record({
        N: fc.integer({ min: 33, max: 512 }),
        nFrac: fc.double({ min: 0, max: 1, noNaN: true }),
        posFrac: fc.double({ min: 0, max: 1, noNaN: true }),
        minP: fc.integer({ min: 0, max: 64 }),
        minN: fc.integer({ min: 0, max: 64 }),
      })
      .map(({ N, nFrac, posFrac, minP, minN }) => {
        const n = 1 + Math.floor(nFrac * (N - 2)); // 1 <= n < N
        const p = Math.round(posFrac * N);
        const minPositive = Math.min(minP, n);
        const minNegative = Math.min(minN, n - minPositive);
        return { p, q: N - p, n, minPositive, minNegative };
      });
    fc.assert(
      fc.property(arb, ({ p, q, n, minPositive, minNegative }) => {
        check(p, q, n, minPositive, minNegative);
      }),
      { numRuns: 5000 },
    );
  });
});
