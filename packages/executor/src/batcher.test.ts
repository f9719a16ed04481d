import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Batcher } from './batcher.js';

describe('Batcher', () => {
  it('flushes full batches at once, in order, never larger than size', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 0, max: 200 }), (size, n) => {
        const batches: number[][] = [];
        const b = new Batcher<number>(size, 10_000, (x) => batches.push(x));
        for (let i = 0; i < n; i++) b.push(i);
        b.drain();
        expect(batches.flat()).toEqual(Array.from({ length: n }, (_, i) => i));
        expect(batches.every((x) => x.length <= size && x.length > 0)).toBe(true);
      }),
    );
  });

  it('flushes a partial batch after the linger time', async () => {
    const batches: number[][] = [];
    const b = new Batcher<number>(100, 20, (x) => batches.push(x));
    b.push(1);
    b.push(2);
    expect(batches).toEqual([]);
    await new Promise((r) => setTimeout(r, 60));
    expect(batches).toEqual([[1, 2]]);
  });
});
