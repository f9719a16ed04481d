import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { truncateMiddle } from './truncate.js';

describe('truncateMiddle', () => {
  it('leaves short text alone', () => {
    expect(truncateMiddle('hello', 5)).toBe('hello');
  });

  it('keeps head and tail and says how much was cut', () => {
    const text = `${'a'.repeat(100)}${'m'.repeat(1000)}${'z'.repeat(100)}`;
    const out = truncateMiddle(text, 200);
    expect(out.startsWith('a'.repeat(50))).toBe(true);
    expect(out.endsWith('z'.repeat(50))).toBe(true);
    expect(out).toMatch(/\[\d+ characters truncated\]/);
  });

  it('never exceeds the limit and keeps a prefix and a suffix of the input', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 3000 }), fc.integer({ min: 60, max: 2000 }), (text, max) => {
        const out = truncateMiddle(text, max);
        expect(out.length).toBeLessThanOrEqual(Math.max(max, text.length <= max ? text.length : 0));
        if (text.length <= max) return;
        const [head, tail] = out.split(/\n\.\.\.\[\d+ characters truncated\]\.\.\.\n/);
        expect(text.startsWith(head!)).toBe(true);
        expect(text.endsWith(tail!)).toBe(true);
        const dropped = Number(/\[(\d+) characters/.exec(out)![1]);
        expect(head!.length + tail!.length + dropped).toBe(text.length);
      }),
    );
  });
});
