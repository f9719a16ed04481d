import { LIMITS } from '../limits.js';

/** An exact rational with a positive denominator, in lowest terms. */
export interface Rat {
  readonly n: bigint;
  readonly d: bigint;
}

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b < 0n ? -b : b;
  // sampled points keep most parts under 2^53, where Euclid on doubles is exact and far cheaper
  while (y !== 0n) {
    if (x <= SAFE && y <= SAFE) return BigInt(gcdSmall(Number(x), Number(y)));
    [x, y] = [y, x % y];
  }
  return x;
}

function gcdSmall(a: number, b: number): number {
  while (b !== 0) {
    const t = a % b;
    a = b;
    b = t;
  }
  return a;
}

export function rat(n: bigint, d: bigint = 1n): Rat {
  if (d === 0n) throw new RangeError('zero denominator');
  if (d < 0n) {
    n = -n;
    d = -d;
  }
  if (d === 1n) return { n, d };
  const g = gcd(n, d);
  return g > 1n ? { n: n / g, d: d / g } : { n, d };
}

const DECIMAL = /^\d*(?:\.\d*)?$/;

/** Parses `123`, `0.25`, `.5` into an exact rational (decimal literals are exact decimals). */
export function ratFromDecimal(text: string): Rat {
  // up to 15 digits (below 2^53) the value and 10^k are exact doubles: reduce them without BigInt
  if (text.length <= 15 && DECIMAL.test(text)) {
    const dot = text.indexOf('.');
    const frac = dot < 0 ? 0 : text.length - dot - 1;
    const n = Number(dot < 0 ? text : text.slice(0, dot) + text.slice(dot + 1));
    if (Number.isSafeInteger(n)) return frac === 0 ? { n: BigInt(n), d: 1n } : ratOfDoubles(n, 10 ** frac);
  }
  const [intPart = '', frac = ''] = text.split('.');
  const digits = `${intPart}${frac}`.replace(/^0+(?=\d)/, '') || '0';
  return rat(BigInt(digits), 10n ** BigInt(frac.length));
}

/** Parts below 2^25: sums of two products stay below 2^53, so doubles compute them exactly. */
const SMALL = 1n << 25n;
const small = (a: Rat): boolean => a.n < SMALL && a.n > -SMALL && a.d < SMALL;

/** n/d from exact doubles (|n|, d < 2^53, d > 0), reduced without BigInt arithmetic. */
function ratOfDoubles(n: number, d: number): Rat {
  const g = gcdSmall(Math.abs(n), d);
  return { n: BigInt(n / g), d: BigInt(d / g) };
}

/**
 * Integers whose exact sum or product is below 2^53 in magnitude: a double computes it exactly, and a
 * result at or past 2^53 (rounded or not) is never a safe integer, so null then means "use BigInt". The
 * exact sample point is an integer near 2^20, so a quadratic's steps stay here instead of in BigInt.
 */
function intSum(a: Rat, b: Rat): Rat | null {
  if (a.d !== 1n || b.d !== 1n) return null;
  const x = Number(a.n);
  const y = Number(b.n);
  if (!Number.isSafeInteger(x) || !Number.isSafeInteger(y)) return null; // a conversion may have rounded
  const s = x + y;
  return Number.isSafeInteger(s) ? { n: BigInt(s), d: 1n } : null;
}
function intProduct(a: Rat, b: Rat): Rat | null {
  if (a.d !== 1n || b.d !== 1n) return null;
  const x = Number(a.n);
  const y = Number(b.n);
  if (!Number.isSafeInteger(x) || !Number.isSafeInteger(y)) return null;
  const p = x * y;
  return Number.isSafeInteger(p) ? { n: BigInt(p), d: 1n } : null;
}

export const add = (a: Rat, b: Rat): Rat =>
  small(a) && small(b)
    ? ratOfDoubles(Number(a.n) * Number(b.d) + Number(b.n) * Number(a.d), Number(a.d) * Number(b.d))
    : (intSum(a, b) ?? rat(a.n * b.d + b.n * a.d, a.d * b.d));
export const sub = (a: Rat, b: Rat): Rat => add(a, neg(b));
export const mul = (a: Rat, b: Rat): Rat =>
  small(a) && small(b)
    ? ratOfDoubles(Number(a.n) * Number(b.n), Number(a.d) * Number(b.d))
    : (intProduct(a, b) ?? rat(a.n * b.n, a.d * b.d));
export const div = (a: Rat, b: Rat): Rat => rat(a.n * b.d, a.d * b.n);
export const neg = (a: Rat): Rat => ({ n: -a.n, d: a.d });
export const eq = (a: Rat, b: Rat): boolean => a.n === b.n && a.d === b.d;
export const isInt = (a: Rat): boolean => a.d === 1n;

function bits(x: bigint): number {
  const a = x < 0n ? -x : x;
  if (a <= SAFE) return a === 0n ? 0 : Math.floor(Math.log2(Number(a))) + 1; // an upper bound is all callers need
  return a.toString(16).length * 4;
}

/** a^k for an integer k, or null when the exact result would exceed `LIMITS.maxExactBits`. */
export function powInt(a: Rat, k: bigint): Rat | null {
  if (k === 0n) return a.n === 0n ? null : rat(1n);
  const abs = k < 0n ? -k : k;
  const size = Math.max(bits(a.n), bits(a.d)) * Number(abs);
  if (!Number.isFinite(size) || size > LIMITS.maxExactBits) return null;
  if (k < 0n && a.n === 0n) return null;
  if (k > 0n && k <= 64n && a.d === 1n) {
    // an integer to a small power, by exact double products while they stay below 2^53
    const x = Number(a.n);
    let p = x;
    for (let i = 1n; i < k && Number.isSafeInteger(p); i++) p *= x;
    if (Number.isSafeInteger(p) && Number.isSafeInteger(x)) return { n: BigInt(p), d: 1n };
  }
  const e = abs;
  const r = rat(a.n ** e, a.d ** e);
  return k < 0n ? div(rat(1n), r) : r;
}

/** Past this size exact arithmetic stops (the gcd in every step would grow quadratically). */
const HUGE = 1n << BigInt(LIMITS.maxExactBits * 8);

/** Is either part of the rational beyond the size where we keep computing exactly? */
const NEG_HUGE = -HUGE;
export function isHuge(a: Rat): boolean {
  return a.n > HUGE || a.n < NEG_HUGE || a.d > HUGE; // no -a.n: a BigInt made at every exact step
}

export function toNumber(a: Rat): number {
  const x = Number(a.n) / Number(a.d);
  if (Number.isFinite(x)) return x;
  // Huge numerator and denominator: scale both down before dividing.
  const shift = BigInt(Math.max(0, Math.max(bits(a.n), bits(a.d)) - 1000));
  return Number(a.n >> shift) / Number(a.d >> shift);
}
