import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { unlimited } from '../deadline.js';
import type { Node } from '../latex/ast.js';
import { evaluate, exactNum, type Num, numOp } from './evaluate.js';
import * as R from './rational.js';

/** Field by field, -0 told from 0. */
function same(a: Num, b: Num): void {
  expect(a.exact).toEqual(b.exact);
  expect(Object.is(a.f, b.f)).toBe(true);
  expect(Object.is(a.err, b.err)).toBe(true);
}

describe('exact integer steps in doubles', () => {
  const int = fc.oneof(
    fc.bigInt({ min: -(2n ** 54n), max: 2n ** 54n }),
    fc.bigInt({ min: -(2n ** 21n), max: 2n ** 21n }),
    fc.constantFrom(0n, 1n, -1n, 2n ** 53n - 1n, -(2n ** 53n) + 1n, 2n ** 53n),
  );

  it('give what the BigInt path gives (exactNum of the exact result), zero signs included', () => {
    fc.assert(
      fc.property(int, int, (a, b) => {
        const x = exactNum(R.rat(a));
        const y = exactNum(R.rat(b));
        same(numOp(x, y, 'add'), exactNum(R.add(R.rat(a), R.rat(b))));
        same(numOp(x, y, 'mul'), exactNum(R.mul(R.rat(a), R.rat(b))));
        const neg: Node = { k: 'add', terms: [{ sign: -1, x: { k: 'num', v: R.rat(a), dec: null } }] };
        same(evaluate(neg, new Map(), unlimited()) as Num, exactNum(R.neg(R.rat(a))));
      }),
      { numRuns: 3000 },
    );
  });
});
