import type { Node } from '../latex/ast.js';
import type { Num } from '../math/evaluate.js';
import * as R from '../math/rational.js';

/**
 * Floats agree when they differ by at most this many times the sum of their error bounds (each
 * `Num.err` bounds its own rounding; the factor covers libm's slack). No fixed tolerance: a tiny
 * extra term (`+ 10^{-12}\\ln x`) is seen as soon as it exceeds the evaluation's rounding error.
 */
const ERR_FACTOR = 4;

/**
 * Past this error bound (relative to the value, or absolute below 1) a float decides nothing: its
 * computation lost the answer (arcsin at ±1 of a rounded value, tan next to its pole, a difference
 * of two huge equal terms). Without it an answer could carry a zero whose bound is huge
 * (`7 + \\tan(\\frac{\\pi}{2} - 10^{-15}) - \\tan(\\frac{\\pi}{2} - 10^{-15})`) and match every gold;
 * with it, equality is never looser than the relative 1e-9 used before.
 */
const MAX_ERR = 1e-10;

/** Is this value's error bound small enough for a comparison to mean anything? */
export function decidable(a: Num): boolean {
  return a.err <= MAX_ERR * Math.max(1, Math.abs(a.f)); // false for NaN and infinite bounds too
}

/** Do two floats agree within their rounding errors (both decidable)? */
export function floatsAgree(a: Num, b: Num): boolean {
  return decidable(a) && decidable(b) && Math.abs(a.f - b.f) <= ERR_FACTOR * (a.err + b.err);
}

/** Exactly zero, or a decidable float within its rounding error of zero. */
export function isZero(a: Num): boolean {
  return a.exact ? a.exact.n === 0n : decidable(a) && Math.abs(a.f) <= ERR_FACTOR * a.err;
}

/** An integer written as such (`5`, `-12`), the kind of gold that accepts only integer values. */
function integerLiteral(n: Node | undefined): boolean {
  if (n === undefined) return false;
  if (n.k === 'num') return n.dec === null && n.v.d === 1n;
  return n.k === 'add' && n.terms.length === 1 && n.terms[0]?.sign === -1 && integerLiteral(n.terms[0].x);
}

/** Written decimals of a plain decimal literal (`0.33`, `-2.6667`, `12.5\%`), else null. */
export function decimalLiteral(n: Node): number | null {
  if (n.k === 'num') return n.dec;
  if (n.k === 'pct') return decimalLiteral(n.x);
  if (n.k === 'add' && n.terms.length === 1 && n.terms[0]?.sign === -1) return decimalLiteral(n.terms[0].x);
  return null;
}

/**
 * Equal numbers. Where either side is a written decimal (a sympy `Float` in Math-Verify), both are
 * rounded half to even to `floatRounding` places and must agree there, as Math-Verify's
 * `sympy_numeric_eq` does (`a.round(float_rounding) == b.round(float_rounding)`, default 6): gold
 * 1/3 accepts 0.333333 but not 0.33, gold 22/7 not 3.14, gold 2.5 accepts 2.5000001. Otherwise
 * exact rationals must be exactly equal and floats agree within their rounding errors
 * (Math-Verify's `evalf(n=15)` on the relative difference). An integer gold accepts only an
 * exactly integer-valued answer (Math-Verify's rule): 5.0 for 5, never 5.0000001.
 */
export function numbersClose(a: Num, b: Num, floatRounding: number, ga?: Node, pb?: Node): boolean {
  if (a.exact && b.exact && R.eq(a.exact, b.exact)) return true;
  // the same double is not the same number when both are exact (10^{20} + 1 against 10^{20})
  if (a.f === b.f && !(a.exact && b.exact)) return Number.isFinite(a.f) || !Number.isNaN(a.f);
  if (!Number.isFinite(a.f) || !Number.isFinite(b.f)) return false;
  if (b.exact && integerLiteral(ga)) return false; // exact equality failed above
  const written =
    (ga !== undefined && decimalLiteral(ga) !== null) || (pb !== undefined && decimalLiteral(pb) !== null);
  if (written) return roundedEqual(a, b, floatRounding);
  if (a.exact && b.exact) return false;
  return floatsAgree(a, b);
}

/** round(a, places) == round(b, places), half to even; exact for exact values. */
function roundedEqual(a: Num, b: Num, places: number): boolean {
  if (a.exact && b.exact) return roundExact(a.exact, places) === roundExact(b.exact, places);
  const s = 10 ** places;
  const x = a.exact ? null : a.f * s;
  const y = b.exact ? null : b.f * s;
  // past 2^52 a float has no fraction left to round at this scale: compare to the last bits
  if ((x !== null && Math.abs(x) >= 2 ** 52) || (y !== null && Math.abs(y) >= 2 ** 52)) {
    const scale = Math.max(Math.abs(a.f), Math.abs(b.f));
    return Math.abs(a.f - b.f) <= 4 * Number.EPSILON * scale;
  }
  const ra = a.exact ? Number(roundExact(a.exact, places)) : roundHalfEven(x as number);
  const rb = b.exact ? Number(roundExact(b.exact, places)) : roundHalfEven(y as number);
  return ra === rb;
}

/** round-half-to-even(q · 10^places) as an integer, exactly. */
function roundExact(q: R.Rat, places: number): bigint {
  const num = q.n * 10n ** BigInt(places);
  let fl = num / q.d;
  if (num < 0n && fl * q.d !== num) fl -= 1n; // floor, not truncation
  const twice = 2n * (num - fl * q.d);
  if (twice > q.d || (twice === q.d && fl % 2n !== 0n)) return fl + 1n;
  return fl;
}

function roundHalfEven(x: number): number {
  const fl = Math.floor(x);
  const d = x - fl;
  if (d > 0.5) return fl + 1;
  if (d < 0.5) return fl;
  return fl % 2 === 0 ? fl : fl + 1;
}
