import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type DataCursor, startCursor, takeIds } from './cursor.js';

describe('data cursor', () => {
  const all = Array.from({ length: 10 }, (_, i) => `p${i}`);

  it('covers each epoch once, reshuffles the next, and resumes from a saved cursor exactly', () => {
    let c: DataCursor = startCursor('s1', null);
    const seen: string[] = [];
    const cursors: DataCursor[] = [];
    for (let i = 0; i < 7; i++) {
      const t = takeIds(c, all, 3, 5);
      seen.push(...t.ids);
      c = t.cursor;
      cursors.push(JSON.parse(JSON.stringify(c)));
    }
    expect(new Set(seen.slice(0, 10)).size).toBe(10);
    // The step that crosses into epoch 2 passes over an id it already took: epoch 2 may miss one.
    expect(new Set(seen.slice(10, 20)).size).toBeGreaterThanOrEqual(9);
    expect(seen.slice(0, 10)).not.toEqual(seen.slice(10, 20));
    // resume after step 3 from the serialised cursor
    let r = cursors[2]!;
    const replay: string[] = [];
    for (let i = 3; i < 7; i++) {
      const t = takeIds(r, all, 3, 5);
      replay.push(...t.ids);
      r = t.cursor;
    }
    expect(replay).toEqual(seen.slice(9));
  });

  it('draws only from a filtered pool, each id once when the pool is smaller than the step', () => {
    const t = takeIds(startCursor('hard', ['p1', 'p2']), all, 5, 1);
    expect([...t.ids].sort()).toEqual(['p1', 'p2']);
  });

  it('never repeats an id within one step, across epoch boundaries too', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 16 }),
        fc.integer({ min: 0, max: 1000 }),
        (size, count, seed) => {
          const pool = all.concat(all.map((p) => `${p}b`)).slice(0, size);
          let c = startCursor('s', null);
          for (let step = 0; step < 6; step++) {
            const t = takeIds(c, pool, count, seed);
            expect(t.ids).toHaveLength(Math.min(count, size));
            expect(new Set(t.ids).size).toBe(t.ids.length);
            c = t.cursor;
          }
        },
      ),
    );
  });
});
