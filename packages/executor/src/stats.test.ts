import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { quantile, StatsRecorder } from './stats.js';

describe('quantile', () => {
  it('is an element of the data, monotone in q, and bounded by min and max', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 200 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (xs, q1, q2) => {
          const s = [...xs].sort((a, b) => a - b);
          const [lo, hi] = q1 <= q2 ? [q1, q2] : [q2, q1];
          expect(s).toContain(quantile(s, lo));
          expect(quantile(s, lo)).toBeLessThanOrEqual(quantile(s, hi));
          expect(quantile(s, 0)).toBe(s[0]);
          expect(quantile(s, 1)).toBe(s.at(-1));
        },
      ),
    );
  });

  it('is the nearest rank', () => {
    const s = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(quantile(s, 0.5)).toBe(50);
    expect(quantile(s, 0.99)).toBe(99);
    expect(quantile([], 0.5)).toBe(0);
  });
});

describe('StatsRecorder', () => {
  it('counts statuses and summarises latency', () => {
    const r = new StatsRecorder();
    for (let i = 1; i <= 10; i++) r.record({ status: i % 2 ? 'ok' : 'timeout', latencyMs: i });
    const s = r.snapshot();
    expect(s.calls).toBe(10);
    expect(s.byStatus).toEqual({ ok: 5, timeout: 5 });
    expect(s.latencyMs).toMatchObject({ p50: 5, max: 10, mean: 5.5 });
  });
});
