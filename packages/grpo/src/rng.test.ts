import { describe, expect, it } from 'vitest';
import { createRng, hashString } from './rng.js';

describe('createRng', () => {
  it('is deterministic per (seed, stream) and differs across them', () => {
    const draw = (seed: number, stream?: number) => {
      const r = createRng(seed, stream);
      return Array.from({ length: 8 }, () => r.nextU32());
    };
    expect(draw(1)).toEqual(draw(1));
    expect(draw(1)).not.toEqual(draw(2));
    expect(draw(1, 5)).not.toEqual(draw(1, 6));
    expect(hashString('prompt-1')).not.toBe(hashString('prompt-2'));
  });

  it('draws below(k) uniformly (chi-square, k = 10)', () => {
    const r = createRng(123);
    const counts = new Array<number>(10).fill(0);
    const n = 100_000;
    for (let i = 0; i < n; i++) counts[r.below(10)]!++;
    const chi2 = counts.reduce((s, c) => s + (c - n / 10) ** 2 / (n / 10), 0);
    expect(chi2).toBeLessThan(27.9); // p = 0.001 for 9 degrees of freedom
  });

  it('rejects a bound it cannot draw below', () => {
    expect(() => createRng(0).below(0)).toThrow(RangeError);
  });
});
