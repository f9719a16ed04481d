import { describe, expect, it } from 'vitest';
import { verifyBatchIsolated } from '../src/index.js';

describe('verifyBatchIsolated', () => {
  it('returns the same verdicts as in-process, in order', async () => {
    const r = await verifyBatchIsolated([
      { gold: '1', response: '\\boxed{1}' },
      { gold: '2', response: '\\boxed{3}' },
      { gold: '\\frac12', response: 'so $0.5$' },
    ]);
    expect(r.map((x) => x.correct)).toEqual([true, false, true]);
  });

  it('kills a CAS call that runs past the hard timeout and carries on with the rest', async () => {
    const t0 = performance.now();
    const r = await verifyBatchIsolated(
      [
        { gold: '1', response: '\\boxed{1}' },
        // our parser does not read \sum, so this goes to compute-engine, which loops over 10^6 terms
        { gold: '1', response: '\\boxed{\\sum_{i=1}^{99}\\sum_{j=1}^{99}\\sum_{k=1}^{99} ijk}' },
        { gold: '5', response: '\\boxed{5}' },
      ],
      { casFallback: true, hardTimeoutMs: 3_000 },
    );
    expect(r.map((x) => x.reason)).toEqual(['string-match', 'timeout', 'string-match']);
    expect(performance.now() - t0).toBeLessThan(60_000);
  }, 120_000);
});
