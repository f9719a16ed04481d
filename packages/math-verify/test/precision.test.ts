import { describe, expect, it } from 'vitest';
import { MathVerifyError, verify } from '../src/index.js';

/**
 * Written decimals are compared as Math-Verify's grader.py `sympy_numeric_eq` does: both sides
 * rounded half to even to `float_rounding` places (default 6), then equal or not.
 */
describe('decimal answers: rounded to floatRounding places (default 6), as Math-Verify', () => {
  it.each([
    ['\\frac{22}{7}', '\\boxed{3.14}'],
    ['e', '\\boxed{2.72}'],
    ['\\frac{2}{3}', '\\boxed{0.67}'],
    ['\\pi', '\\boxed{3.14}'],
    ['\\pi', '\\boxed{3.1416}'],
    ['\\sqrt{2}', '\\boxed{1.414}'],
    ['\\frac{70}{9}', '\\boxed{7.78}'],
    ['0.33', '\\boxed{0.3333}'], // both written: 0.33 and 0.3333 differ at 6 places
    ['3.14', '\\boxed{3.14159}'],
    ['\\frac{2}{3}', '\\boxed{0.666666}'], // 2/3 rounds to 0.666667
    [
      '\\begin{pmatrix}\\frac{1}{3}\\\\\\frac{1}{5}\\end{pmatrix}',
      '\\boxed{\\begin{pmatrix}0.33\\\\0.2\\end{pmatrix}}',
    ],
    ['(\\frac{3}{5}, \\frac{8}{3}]', '\\boxed{(0.6, 2.6667]}'],
  ])('gold %j rejects the approximation %j', (gold, response) => {
    expect(verify(gold, response)).toMatchObject({ correct: false, reason: 'not-equal' });
  });

  it.each([
    ['\\frac{1}{3}', '\\boxed{0.333333}'],
    ['\\frac{1}{3}', '\\boxed{0.3333333}'],
    ['\\frac{2}{3}', '\\boxed{0.666667}'],
    ['\\pi', '\\boxed{3.141593}'],
    ['e', '\\boxed{2.718282}'],
    ['\\sqrt{2}', '\\boxed{1.41421356}'],
    // a rounded decimal gold against a longer decimal of the same value at 6 places
    ['2.5', '\\boxed{2.5000001}'],
    ['16386.2', '\\boxed{16386.20000000001}'],
    ['0.333333', '\\boxed{\\frac{1}{3}}'],
    ['1000', '\\boxed{1000.0}'],
    ['33.3333\\%', '\\boxed{\\frac{1}{3}}'],
  ])('gold %j accepts %j', (gold, response) => {
    expect(verify(gold, response)).toMatchObject({ correct: true });
  });

  it('rounds half to even, on the exact written value (sympy Expr.round)', () => {
    expect(verify('2.0000005', '\\boxed{2}').correct).toBe(true); // 2.000000|5 -> 2.000000
    expect(verify('2.0000015', '\\boxed{2.000002}').correct).toBe(true); // -> 2.000002
    expect(verify('2.0000015', '\\boxed{2.000001}').correct).toBe(false);
  });

  it('takes a coarser tolerance only when asked (floatRounding)', () => {
    expect(verify('\\frac{22}{7}', '\\boxed{3.14}', { floatRounding: 2 }).correct).toBe(true);
    expect(verify('\\frac{2}{3}', '\\boxed{0.67}', { floatRounding: 2 }).correct).toBe(true);
    expect(verify('\\frac{2}{3}', '\\boxed{0.66}', { floatRounding: 2 }).correct).toBe(false);
    expect(verify('\\frac{1}{3}', '\\boxed{0.333}', { floatRounding: 3 }).correct).toBe(true);
    expect(() => verify('1', '1', { floatRounding: 1.5 })).toThrow(MathVerifyError);
    expect(() => verify('1', '1', { floatRounding: -1 })).toThrow(/floatRounding/);
  });

  it('leaves exact answers exact: no rounding without a written decimal', () => {
    expect(verify('\\frac{1}{3}', '\\boxed{\\frac{333333}{1000000}}').correct).toBe(false);
    expect(verify('10^{10^{10}}', '\\boxed{10^{10^{10}}+1}').correct).toBe(false);
  });
});
