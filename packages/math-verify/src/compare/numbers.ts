import type { Node } from '../latex/ast.js';
import type { Num } from '../math/evaluate.js';
import * as R from '../math/rational.js';

/** Relative tolerance for values computed in floating point. */
export const REL_TOL = 1e-9;

/** Written decimals of a plain decimal literal (`0.33`, `-2.6667`), else null. */
export function decimalLiteral(n: Node): number | null {
  if (n.k === 'num') return n.dec;
  if (n.k === 'add' && n.terms.length === 1 && n.terms[0]?.sign === -1) return decimalLiteral(n.terms[0].x);
  return null;
}

/**
 * Equal numbers: exact rationals exactly; floats to a relative tolerance. A decimal literal with at
 * least two written decimals also matches an exact value that rounds to it (gold 1/3, answer 0.33;
 * gold 7.78, answer 70/9), as Math-Verify does; one decimal is too coarse to count (0.3 vs 1/3).
 */
export function numbersClose(a: Num, b: Num, ga?: Node, pb?: Node): boolean {
  if (a.exact && b.exact && R.eq(a.exact, b.exact)) return true;
  if (a.f === b.f) return Number.isFinite(a.f) || !Number.isNaN(a.f);
  if (!Number.isFinite(a.f) || !Number.isFinite(b.f)) return false;
  const scale = Math.max(1, Math.abs(a.f), Math.abs(b.f));
  // two exact values (integers, fractions, written decimals) must be exactly equal
  if (!(a.exact && b.exact) && Math.abs(a.f - b.f) <= REL_TOL * scale) return true;
  const gd = ga ? decimalLiteral(ga) : null;
  const pd = pb ? decimalLiteral(pb) : null;
  const d = gd !== null && pd === null ? gd : pd !== null && gd === null ? pd : null;
  if (d === null || d < 2) return false;
  return Math.abs(a.f - b.f) <= 0.5 * 10 ** -d + 1e-12 * scale;
}
