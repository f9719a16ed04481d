import { describe, expect, it } from 'vitest';
import { answersEqual } from './compare/compare.js';
import { symbolsOf } from './compare/sample.js';
import { Deadline, DeadlineExceeded, unlimited } from './deadline.js';
import { parseLatex } from './latex/parse.js';
import { memoEntries } from './memo.js';
import { verify } from './verify.js';

const options = (deadline: Deadline) => ({ deadline, allowSetRelation: false, floatRounding: 6 });

describe('per-comparison memo tables', () => {
  it('are filled during a comparison and empty once it ends', () => {
    const d = unlimited();
    const gold = parseLatex('y_1=-2x^2+4x+3, y_2=3x^2+12x+10', d);
    const pred = parseLatex('-2(x-1)^2+5, 3(x+2)^2-2', d);
    expect(answersEqual(gold, pred, options(d))).toBe(true);
    expect(memoEntries()).toBe(0);
    expect(
      verify('$y_1=-2x^2+4x+3, y_2=3x^2+12x+10$', '\\boxed{-2(x-1)^2+5}, \\boxed{3(x+2)^2-2}').correct,
    ).toBe(true);
    expect(memoEntries()).toBe(0);
  });

  it('are emptied when a comparison ends by running out of budget', () => {
    const d = unlimited();
    const big = Array.from({ length: 40 }, (_, i) => `x^{${i}}`).join('+');
    const gold = parseLatex(`${big}, ${big}+1`, d);
    const pred = parseLatex(`${big}+1, ${big}`, d);
    const spent = new Deadline(0);
    expect(() => answersEqual(gold, pred, options(spent))).toThrow(DeadlineExceeded);
    expect(memoEntries()).toBe(0);
  });

  it('cache nothing outside a comparison (nothing would empty them)', () => {
    const n = parseLatex('x+y', unlimited());
    expect([...symbolsOf(n)].sort()).toEqual(['x', 'y']);
    expect(memoEntries()).toBe(0);
  });
});
