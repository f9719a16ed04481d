import { fnv1a, fnv1aWord, Rng } from '@agentrl/protocol';
import type { Node } from '../latex/ast.js';
import { exactNum, type Num } from '../math/evaluate.js';
import * as R from '../math/rational.js';
import { memoActive, memoTable } from '../memo.js';

const symbolsCache = memoTable<Node, ReadonlySet<string>>();
const NO_NAMES: ReadonlySet<string> = new Set();

/** Free symbol names of an expression (`e` is Euler's number, not a symbol), once per node. */
export function symbolsOf(n: Node): ReadonlySet<string> {
  if (n.k === 'num' || n.k === 'const') return NO_NAMES; // most matrix cells and list items: no map entry
  if (!memoActive()) return collectSymbols(n, new Set());
  let s = symbolsCache.get(n);
  if (s === undefined) {
    s = collectSymbols(n, new Set());
    symbolsCache.set(n, s);
  }
  return s;
}

function collectSymbols(n: Node, out: Set<string>): Set<string> {
  switch (n.k) {
    case 'sym':
      if (n.name !== 'e') out.add(n.name);
      break;
    case 'add':
      for (const t of n.terms) collectSymbols(t.x, out);
      break;
    case 'mul':
      for (const f of n.fs) collectSymbols(f, out);
      break;
    case 'div':
      collectSymbols(n.a, out);
      collectSymbols(n.b, out);
      break;
    case 'pow':
      collectSymbols(n.b, out);
      collectSymbols(n.e, out);
      break;
    case 'fn':
      for (const a of n.args) collectSymbols(a, out);
      break;
    case 'pct':
      collectSymbols(n.x, out);
      break;
    case 'matrix':
      for (const r of n.rows) for (const c of r) collectSymbols(c, out);
      break;
    case 'rel':
    case 'setop':
      for (const p of n.parts) collectSymbols(p, out);
      break;
    case 'tuple':
    case 'set':
    case 'list':
      for (const p of n.items) collectSymbols(p, out);
      break;
    default:
      break;
  }
  return out;
}

/** Sample points per comparison with free symbols (was 10 fixed ones). */
export const SAMPLE_COUNT = 12;
/** The first points are all positive (where √x and ln x live); the rest mix in negatives, so |x| ≠ x. */
const POSITIVE_SAMPLES = 6;
/** The point evaluated in exact rationals; the others are doubles (no BigInt, several times cheaper). */
const EXACT_POINT = 1;

/**
 * The sample assignments of one comparison, drawn from a stream seeded by the two expressions:
 * deterministic for a pair, yet no response can know in advance where it will be evaluated (a
 * polynomial vanishing at fixed points was the hack). Each value is a random p/q with q in
 * [1000, 2024), a double, and results are compared within the rounding-error bounds evaluation
 * carries. Even points have |x| < 1 (arcsin's domain), odd ones 1 < |x| < 3; each symbol gets its
 * own draw, so x and y are told apart. When both sides are rational functions, one point is
 * instead an exact integer in [2^20, 2^21) (negative where the others are), evaluated in BigInt, so
 * a difference below double precision (`+ 10^{-30}x^3`) is still seen: a nonzero rational function
 * vanishes at a point drawn after it was written only by chance (a pole there is as unlikely).
 */
export function createSampler(names: string[], a: Node, b: Node): (i: number) => Map<string, Num> {
  const rng = Rng.seeded(fnv1aWord(seedOf(a), seedOf(b)));
  // exact arithmetic decides only where it can stay exact: rational functions of the symbols
  const exactPoint = rationalFunction(a) && rationalFunction(b) ? EXACT_POINT : -1;
  const env = new Map<string, Num>(); // one map, refilled for each point (read before the next)
  // points are drawn in order: call with i = 0, 1, 2, ...
  return (i) => {
    for (let j = 0; j < names.length; j++) {
      const exact = i === exactPoint;
      const q = 1000 + rng.below(1024);
      const magnitude = i % 2 === 0 ? 0.05 + 0.9 * rng.next() : 1.05 + 1.95 * rng.next();
      const negative = i >= POSITIVE_SAMPLES && ((i >> 1) + j) % 2 === 0; // small and large negatives
      // the exact point is an integer in [2^20, 2^21): no denominators, so no gcd at each step
      const p = (exact ? 2 ** 20 + rng.below(2 ** 20) : Math.round(magnitude * q)) * (negative ? -1 : 1);
      // a double point is exactly itself: its error is 0, only what is computed from it rounds
      env.set(names[j] as string, exact ? exactNum(R.rat(BigInt(p))) : { exact: null, f: p / q, err: 0 });
    }
    return env;
  };
}

const rationalCache = memoTable<Node, boolean>();

/** isRational, once per node within a comparison (a list's items meet several others). */
function rationalFunction(n: Node): boolean {
  if (!memoActive()) return isRational(n);
  let r = rationalCache.get(n);
  if (r === undefined) {
    r = isRational(n);
    rationalCache.set(n, r);
  }
  return r;
}

/** Built from numbers and symbols with + − × ÷, integer powers and |·| only: exact at a rational point. */
function isRational(n: Node): boolean {
  switch (n.k) {
    case 'num':
      return true;
    case 'sym':
      return n.name !== 'e';
    case 'add':
      return n.terms.every((t) => isRational(t.x));
    case 'mul':
      return n.fs.every(isRational);
    case 'div':
      return isRational(n.a) && isRational(n.b);
    case 'pow':
      return isRational(n.b) && isInteger(n.e);
    case 'pct':
      return isRational(n.x);
    case 'fn':
      return n.name === 'abs' && n.args.every(isRational);
    case 'matrix':
      return n.rows.every((r) => r.every(isRational));
    default:
      return false;
  }
}

function isInteger(n: Node): boolean {
  if (n.k === 'num') return n.v.d === 1n;
  return n.k === 'add' && n.terms.length === 1 && n.terms[0]?.sign === -1 && isInteger(n.terms[0].x);
}

const SEED_BASE = fnv1a('math-verify');
const seedCache = memoTable<Node, number>();

/** One side's share of a comparison's seed, hashed once per node (a list's items meet several others). */
function seedOf(n: Node): number {
  if (!memoActive()) return hashNode(n, SEED_BASE);
  let h = seedCache.get(n);
  if (h === undefined) {
    h = hashNode(n, SEED_BASE);
    seedCache.set(n, h);
  }
  return h;
}

/** The low 32 bits of an integer, as BigInt.asUintN(32, v) gives them, without a BigInt result when v < 2^53. */
function low32(v: bigint): number {
  const f = Number(v);
  return Number.isSafeInteger(f) ? f >>> 0 : Number(BigInt.asUintN(32, v));
}

/** FNV-1a over an expression's structure (kinds, names, signs, numbers): its sampling seed, no strings built. */
function hashNode(n: Node, h: number): number {
  let x = fnv1a(n.k, h);
  switch (n.k) {
    case 'num':
      return fnv1aWord(fnv1aWord(x, low32(n.v.n)), low32(n.v.d));
    case 'sym':
      return fnv1a(n.name, x);
    case 'const':
      return fnv1a(n.name, x);
    case 'text':
      return fnv1a(n.s, x);
    case 'add':
      for (const t of n.terms) x = hashNode(t.x, fnv1a(String(t.sign), x));
      return x;
    case 'mul':
      for (const f of n.fs) x = hashNode(f, x);
      return x;
    case 'div':
      return hashNode(n.b, hashNode(n.a, x));
    case 'pow':
      return hashNode(n.e, hashNode(n.b, x));
    case 'fn':
      x = fnv1a(n.name, x);
      for (const arg of n.args) x = hashNode(arg, x);
      return x;
    case 'pct':
      return hashNode(n.x, x);
    case 'tuple':
      x = fnv1a(n.open + n.close, x);
      for (const item of n.items) x = hashNode(item, x);
      return x;
    case 'set':
    case 'list':
      for (const item of n.items) x = hashNode(item, x);
      return x;
    case 'matrix':
      for (const row of n.rows) for (const c of row) x = hashNode(c, x);
      return fnv1aWord(x, n.rows.length);
    case 'rel':
      x = fnv1a(n.ops.join(), x);
      for (const part of n.parts) x = hashNode(part, x);
      return x;
    case 'setop':
      x = fnv1a(n.op, x);
      for (const part of n.parts) x = hashNode(part, x);
      return x;
  }
}
