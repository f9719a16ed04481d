import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LIMITS } from '../limits.js';
import * as R from './rational.js';

const big = fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n });
const ratArb = fc
  .tuple(
    big,
    big.filter((d) => d !== 0n),
  )
  .map(([n, d]) => R.rat(n, d));

describe('exact rationals', () => {
  it('are kept in lowest terms with a positive denominator', () => {
    fc.assert(
      fc.property(ratArb, (a) => {
        expect(a.d > 0n).toBe(true);
        expect(R.eq(R.rat(a.n * 7n, a.d * 7n), a)).toBe(true);
      }),
    );
  });

  it('(a + b) - b = a and (a * b) / b = a', () => {
    fc.assert(
      fc.property(ratArb, ratArb, (a, b) => {
        expect(R.eq(R.sub(R.add(a, b), b), a)).toBe(true);
        if (b.n !== 0n) expect(R.eq(R.div(R.mul(a, b), b), a)).toBe(true);
      }),
    );
  });

  it('decimal literals are exact', () => {
    expect(R.ratFromDecimal('0.1')).toEqual(R.rat(1n, 10n));
    expect(R.ratFromDecimal('.25')).toEqual(R.rat(1n, 4n));
    expect(R.ratFromDecimal('007.50')).toEqual(R.rat(15n, 2n));
  });

  it('the double fast path of ratFromDecimal gives the BigInt reading, in lowest terms', () => {
    const digits = fc.stringMatching(/^\d{0,20}$/);
    fc.assert(
      fc.property(digits, fc.option(digits), (int, frac) => {
        const text = frac === null ? int : `${int}.${frac}`;
        const all = `${int}${frac ?? ''}`.replace(/^0+(?=\d)/, '') || '0';
        expect(R.ratFromDecimal(text)).toEqual(R.rat(BigInt(all), 10n ** BigInt(frac?.length ?? 0)));
      }),
    );
  });

  it('integer powers are exact below the size limit and refused above it', () => {
    expect(R.powInt(R.rat(2n), 100n)).toEqual(R.rat(2n ** 100n));
    expect(R.powInt(R.rat(2n, 3n), -2n)).toEqual(R.rat(9n, 4n));
    expect(R.powInt(R.rat(10n), 10n ** 10n)).toBeNull();
    expect(R.powInt(R.rat(3n), BigInt(LIMITS.maxExactBits))).toBeNull();
    expect(R.powInt(R.rat(0n), -1n)).toBeNull();
  });

  it('toNumber stays finite for huge numerators and denominators', () => {
    expect(R.toNumber(R.rat(10n ** 400n + 1n, 10n ** 400n))).toBeCloseTo(1, 12);
  });
});

describe('integer steps in doubles', () => {
  // around 2^53 (where doubles stop being exact) and 2^20 (the exact sample point's size)
  const edge = fc.oneof(
    fc.bigInt({ min: -(2n ** 54n), max: 2n ** 54n }),
    fc.bigInt({ min: 2n ** 53n - 70n, max: 2n ** 53n + 70n }),
    fc.bigInt({ min: -(2n ** 27n), max: 2n ** 27n }),
    fc.bigInt({ min: 2n ** 20n, max: 2n ** 21n }),
  );
  const int = fc.tuple(edge, fc.boolean()).map(([n, flip]) => ({ n: flip ? -n : n }));

  it('agree with BigInt arithmetic for sums, products and powers, at and past 2^53', () => {
    fc.assert(
      fc.property(int, int, fc.integer({ min: 1, max: 5 }), ({ n: a }, { n: b }, k) => {
        expect(R.add(R.rat(a), R.rat(b))).toEqual({ n: a + b, d: 1n });
        expect(R.mul(R.rat(a), R.rat(b))).toEqual({ n: a * b, d: 1n });
        const p = R.powInt(R.rat(a), BigInt(k));
        if (p !== null) expect(p).toEqual({ n: a ** BigInt(k), d: 1n });
      }),
      { numRuns: 2000 },
    );
    const m = 2n ** 53n - 1n;
    expect(R.add(R.rat(m), R.rat(1n))).toEqual({ n: 2n ** 53n, d: 1n });
    expect(R.mul(R.rat(2n ** 27n), R.rat(2n ** 26n + 1n))).toEqual({ n: 2n ** 53n + 2n ** 27n, d: 1n });
    expect(R.powInt(R.rat(3n), 34n)).toEqual({ n: 3n ** 34n, d: 1n });
    expect(R.powInt(R.rat(-(2n ** 20n) - 3n), 3n)).toEqual({ n: (-(2n ** 20n) - 3n) ** 3n, d: 1n });
  });
});
