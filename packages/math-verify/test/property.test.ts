import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { verify } from '../src/index.js';

/** A small expression language rendered two ways: as the gold writes it, and as a model might. */
type Expr =
  | { k: 'int'; n: number }
  | { k: 'frac'; a: number; b: number }
  | { k: 'sqrt'; n: number }
  | { k: 'sym'; s: string }
  | { k: 'pi' }
  | { k: 'add'; l: Expr; r: Expr }
  | { k: 'mul'; l: Expr; r: Expr }
  | { k: 'pow'; b: Expr; e: number };

const { expr } = fc.letrec<{ expr: Expr }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.integer({ min: -40, max: 40 }).map((n): Expr => ({ k: 'int', n })),
    fc
      .tuple(fc.integer({ min: -20, max: 20 }), fc.integer({ min: 1, max: 20 }))
      .map(([a, b]): Expr => ({ k: 'frac', a, b })),
    fc.integer({ min: 2, max: 50 }).map((n): Expr => ({ k: 'sqrt', n })),
    fc.constantFrom('x', 'y', 'a').map((s): Expr => ({ k: 'sym', s })),
    fc.constant<Expr>({ k: 'pi' }),
    fc.tuple(tie('expr'), tie('expr')).map(([l, r]): Expr => ({ k: 'add', l, r })),
    fc.tuple(tie('expr'), tie('expr')).map(([l, r]): Expr => ({ k: 'mul', l, r })),
    fc.tuple(tie('expr'), fc.integer({ min: 2, max: 3 })).map(([b, e]): Expr => ({ k: 'pow', b, e })),
  ),
}));

/** The gold's way: plain \frac, a + b, \cdot, (..)^{k}. */
function gold(e: Expr): string {
  switch (e.k) {
    case 'int':
      return e.n < 0 ? `(${e.n})` : `${e.n}`;
    case 'frac':
      return e.a < 0 ? `(-\\frac{${-e.a}}{${e.b}})` : `\\frac{${e.a}}{${e.b}}`;
    case 'sqrt':
      return `\\sqrt{${e.n}}`;
    case 'sym':
      return e.s;
    case 'pi':
      return '\\pi';
    case 'add':
      return `(${gold(e.l)} + ${gold(e.r)})`;
    case 'mul':
      return `${gold(e.l)} \\cdot ${gold(e.r)}`;
    case 'pow':
      return `(${gold(e.b)})^{${e.e}}`;
  }
}

/** A model's way: sums and products commuted, \dfrac, \left( \right), \times, spacing. */
function model(e: Expr): string {
  switch (e.k) {
    case 'int':
      return e.n < 0 ? `\\left(${e.n}\\right)` : `${e.n}`;
    case 'frac':
      return e.a < 0 ? `\\left(-\\dfrac{${-e.a}}{${e.b}}\\right)` : `\\dfrac{${e.a}}{${e.b}}`;
    case 'sqrt':
      return `\\sqrt{${e.n}}`;
    case 'sym':
      return e.s;
    case 'pi':
      return '\\pi';
    case 'add':
      return `\\left(${model(e.r)}+${model(e.l)}\\right)`;
    case 'mul':
      return `${model(e.r)}\\times ${model(e.l)}`;
    case 'pow':
      return `\\left(${model(e.b)}\\right)^${e.e}`;
  }
}

describe('properties', () => {
  it('verify(x, \\boxed{x}) is true for every generated gold', () => {
    fc.assert(
      fc.property(expr, (e) => {
        const g = gold(e);
        expect(verify(g, `So the result is $\\boxed{${g}}$.`, { timeoutMs: 1_000 }).correct).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('an equal answer written differently (commuted, \\dfrac, \\left) is recognised by maths, not by string', () => {
    fc.assert(
      fc.property(expr, (e) => {
        const r = verify(gold(e), `The answer is \\boxed{${model(e)}}`, { timeoutMs: 1_000 });
        expect(r.correct).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('different rationals are never equal', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -500, max: 500 }),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: -500, max: 500 }),
        fc.integer({ min: 1, max: 60 }),
        (a, b, c, d) => {
          fc.pre(a * d !== c * b);
          expect(verify(`\\frac{${a}}{${b}}`, `\\boxed{\\frac{${c}}{${d}}}`).correct).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a response with no answer is false with reason no-answer, never an exception', () => {
    const prose = fc.string({
      unit: fc.constantFrom(...'abcdefghij klmnopqrstuvwxyz,.!?\'"-\n'.split('')),
      maxLength: 400,
    });
    fc.assert(
      fc.property(prose, (text) => {
        expect(verify('42', text)).toEqual({ correct: false, extracted: null, reason: 'no-answer' });
      }),
      { numRuns: 300 },
    );
  });

  it('any input at all returns a verdict (never throws) within the budget', () => {
    const noisy = fc.string({
      unit: fc.constantFrom(...'0123456789\\{}$^_()[],.=+-*/ abcxyz'.split('')),
      maxLength: 300,
    });
    fc.assert(
      fc.property(fc.oneof(noisy, fc.string({ unit: 'grapheme' })), noisy, (g, r) => {
        const t0 = performance.now();
        const res = verify(g, r, { timeoutMs: 50 });
        // generous: one call is well under a millisecond; this only catches a pathological blow-up
        expect(performance.now() - t0).toBeLessThan(1_000);
        expect(typeof res.correct).toBe('boolean');
        expect(typeof res.reason).toBe('string');
      }),
      { numRuns: 400 },
    );
  });
});
