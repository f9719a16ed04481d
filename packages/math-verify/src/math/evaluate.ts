import type { Deadline } from '../deadline.js';
import type { Node } from '../latex/ast.js';
import { memoActive, memoTable } from '../memo.js';
import * as R from './rational.js';

/**
 * A number: exact when every step so far was exact, always with its float value, and `err`, a
 * bound on |f − the true value| carried through every floating-point step (running error
 * analysis: each operation adds its own rounding and scales its inputs' errors by its
 * derivative). Equality of floats is then decided by that bound, not by a fixed tolerance that a
 * tiny extra term could hide under.
 */
export interface Num {
  readonly exact: R.Rat | null;
  readonly f: number;
  readonly err: number;
}
export interface Mat {
  readonly rows: Num[][];
}
export type Val = Num | Mat;

/** Raised for nodes that have no numeric value (sets, relations, text). */
export class NotNumeric extends Error {
  override readonly name = 'NotNumeric';
}

/** Unit roundoff of a double. */
const U = 2 ** -53;
/** Rounding error of one correctly rounded operation with result f; libm functions get 4 ulps. */
const ulp = (f: number, k = 1): number => k * U * Math.abs(f);

/** An exact rational; its float carries only the conversion's rounding (a few ulps for huge parts). */
export const exactNum = (r: R.Rat): Num => {
  const f = R.toNumber(r);
  // integers up to 2^53 are doubles exactly
  return { exact: r, f, err: r.d === 1n && Number.isSafeInteger(f) ? 0 : ulp(f, 4) };
};
/** Overflow is not infinity: only `\\infty` itself may be infinite, so 10^{10^{10}} ≠ 10^{10^{10}}+1. */
const floatNum = (f: number, err: number): Num =>
  Number.isFinite(f)
    ? { exact: null, f, err: err + ulp(f) }
    : { exact: null, f: Number.NaN, err: Number.NaN };
const INFINITY: Num = { exact: null, f: Number.POSITIVE_INFINITY, err: 0 };
const PI: Num = { exact: null, f: Math.PI, err: ulp(Math.PI) };
const E: Num = { exact: null, f: Math.E, err: ulp(Math.E) };
const isMat = (v: Val): v is Mat => 'rows' in v;

/** Symbol values for sampling (exact rationals, so polynomials stay exact); `e` is Euler's number unless bound. */
export type Env = ReadonlyMap<string, Num>;

const literals = memoTable<Node, Num>();

export function evaluate(node: Node, env: Env, deadline: Deadline): Val {
  deadline.check();
  switch (node.k) {
    case 'num': {
      // a literal meets every sample point: its Num is made once (BigInt to double is not free)
      if (!memoActive()) return exactNum(node.v);
      let v = literals.get(node);
      if (v === undefined) {
        v = exactNum(node.v);
        literals.set(node, v);
      }
      return v;
    }
    case 'sym': {
      const v = env.get(node.name);
      if (v !== undefined) return v;
      if (node.name === 'e') return E;
      throw new NotNumeric(`unbound symbol ${node.name}`);
    }
    case 'const':
      if (node.name === 'pi') return PI;
      if (node.name === 'e') return E;
      if (node.name === 'inf') return INFINITY;
      throw new NotNumeric('empty set');
    case 'add': {
      let acc: Val | null = null;
      for (const t of node.terms) {
        if (t.sign === 'pm' || t.sign === 'mp') throw new NotNumeric('unexpanded ±');
        const v = evaluate(t.x, env, deadline);
        const signed = t.sign === 1 ? v : negate(v);
        acc = acc === null ? signed : binary(acc, signed, 'add');
      }
      if (acc === null) throw new NotNumeric('empty sum');
      return acc;
    }
    case 'mul': {
      let acc: Val | null = null;
      for (const f of node.fs) {
        const v = evaluate(f, env, deadline);
        acc = acc === null ? v : binary(acc, v, 'mul');
      }
      if (acc === null) throw new NotNumeric('empty product');
      return acc;
    }
    case 'div': {
      const a = evaluate(node.a, env, deadline);
      const b = evaluate(node.b, env, deadline);
      if (isMat(b)) throw new NotNumeric('division by a matrix');
      return binary(a, inverse(b), 'mul');
    }
    case 'pow':
      return power(evaluate(node.b, env, deadline), evaluate(node.e, env, deadline));
    case 'pct':
      return binary(evaluate(node.x, env, deadline), exactNum(R.rat(1n, 100n)), 'mul');
    case 'fn':
      return func(
        node.name,
        node.args.map((a) => evaluate(a, env, deadline)),
      );
    case 'matrix':
      return {
        rows: node.rows.map((r) =>
          r.map((c) => {
            const v = evaluate(c, env, deadline);
            if (isMat(v)) throw new NotNumeric('nested matrix');
            return v;
          }),
        ),
      };
    default:
      throw new NotNumeric(`${node.k} has no numeric value`);
  }
}

function negate(v: Val): Val {
  if (isMat(v)) return { rows: v.rows.map((r) => r.map((c) => negNum(c))) };
  return negNum(v);
}
const negNum = (a: Num): Num =>
  a.exact
    ? isSafeInt(a)
      ? { exact: { n: -a.exact.n, d: 1n }, f: 0 - a.f, err: 0 } // as exactNum(R.neg(a.exact)): 0, never -0
      : exactNum(R.neg(a.exact))
    : { exact: null, f: -a.f, err: a.err };
/** An exact integer below 2^53 (every exact Num is made by exactNum, so its f is exactly its value then). */
const isSafeInt = (a: Num): boolean => a.exact?.d === 1n && Number.isSafeInteger(a.f);
const NAN: Num = { exact: null, f: Number.NaN, err: Number.NaN };

export function inverse(b: Num): Num {
  if (b.exact) {
    if (b.exact.n === 0n) return NAN;
    return exactNum(R.div(R.rat(1n), b.exact));
  }
  const m = Math.abs(b.f);
  // 1/x over [|x| − err, |x| + err]; unbounded when that interval reaches 0
  return floatNum(1 / b.f, b.err < m ? b.err / (m * (m - b.err)) : Number.POSITIVE_INFINITY);
}

export function numOp(a: Num, b: Num, op: 'add' | 'mul'): Num {
  if (isSafeInt(a) && isSafeInt(b)) {
    // integers (the exact sample point's steps): the double is exact while it stays below 2^53
    const f = (op === 'add' ? a.f + b.f : a.f * b.f) + 0; // + 0: -3 · 0 is 0 here, as BigInt makes it
    if (Number.isSafeInteger(f)) return { exact: { n: BigInt(f), d: 1n }, f, err: 0 };
  }
  if (a.exact && b.exact && !R.isHuge(a.exact) && !R.isHuge(b.exact))
    return exactNum(op === 'add' ? R.add(a.exact, b.exact) : R.mul(a.exact, b.exact));
  const f = op === 'add' ? a.f + b.f : a.f * b.f;
  // arithmetic on a real infinity (from \\infty) stays infinite; overflow of finite values does not
  if (!Number.isFinite(a.f) || !Number.isFinite(b.f)) return { exact: null, f, err: 0 };
  const err = op === 'add' ? a.err + b.err : Math.abs(a.f) * b.err + Math.abs(b.f) * a.err + a.err * b.err;
  return floatNum(f, err);
}

/** A float function of one argument: its value, and the input's error scaled by |f'(x)| plus 4 ulps. */
const fn1 = (f: number, slope: number, x: Num): Num =>
  floatNum(f, (x.err === 0 ? 0 : Math.abs(slope) * x.err) + ulp(f, 4)); // an exact input has no error to scale

function binary(a: Val, b: Val, op: 'add' | 'mul'): Val {
  if (!isMat(a) && !isMat(b)) return numOp(a, b, op);
  if (op === 'add') {
    if (!isMat(a) || !isMat(b)) throw new NotNumeric('matrix plus scalar');
    if (a.rows.length !== b.rows.length || a.rows[0]?.length !== b.rows[0]?.length)
      throw new NotNumeric('shape');
    return { rows: a.rows.map((r, i) => r.map((c, j) => numOp(c, b.rows[i]?.[j] as Num, 'add'))) };
  }
  if (!isMat(a)) return { rows: (b as Mat).rows.map((r) => r.map((c) => numOp(a, c, 'mul'))) };
  if (!isMat(b)) return { rows: a.rows.map((r) => r.map((c) => numOp(c, b, 'mul'))) };
  const n = a.rows[0]?.length ?? 0;
  if (n !== b.rows.length) throw new NotNumeric('shape');
  const cols = b.rows[0]?.length ?? 0;
  return {
    rows: a.rows.map((r) =>
      Array.from({ length: cols }, (_, j) => {
        let acc = exactNum(R.rat(0n));
        for (let k = 0; k < n; k++) acc = numOp(acc, numOp(r[k] as Num, b.rows[k]?.[j] as Num, 'mul'), 'add');
        return acc;
      }),
    ),
  };
}

function power(b: Val, e: Val): Val {
  if (isMat(e)) throw new NotNumeric('matrix exponent');
  if (isMat(b)) {
    if (e.exact?.d !== 1n || e.exact.n < 1n || e.exact.n > 16n) throw new NotNumeric('matrix power');
    let acc: Val = b;
    for (let i = 1n; i < e.exact.n; i++) acc = binary(acc, b, 'mul');
    return acc;
  }
  if (b.exact && e.exact) {
    if (e.exact.d === 1n) {
      const r = R.powInt(b.exact, e.exact.n);
      if (r) return exactNum(r);
    } else if (e.exact.d === 2n && b.exact.n >= 0n) {
      const s = sqrtExact(b.exact);
      if (s) {
        const r = R.powInt(s, e.exact.n);
        if (r) return exactNum(r);
      }
    }
  }
  const f = realPow(b.f, e.f, e.exact);
  // ∂/∂b = e·f/b, ∂/∂e = f·ln|b|; a float base of 0 has no useful slope
  if (b.f === 0) return floatNum(f, b.err === 0 && e.err === 0 ? 0 : Number.POSITIVE_INFINITY);
  let err = Math.abs((e.f * f) / b.f) * b.err;
  if (e.err > 0) err += Math.abs(f * Math.log(Math.abs(b.f))) * e.err;
  return floatNum(f, err + ulp(f, 4));
}

/** Real powers, including odd roots of negatives written as x^{1/3}. */
function realPow(b: number, e: number, exact: R.Rat | null): number {
  if (b < 0 && exact && exact.d !== 1n && exact.d % 2n === 1n) {
    const m = Math.abs(b) ** e;
    return exact.n % 2n === 0n ? m : -m;
  }
  return b ** e;
}

function isqrt(n: bigint): bigint | null {
  if (n < 0n) return null;
  if (n < 2n) return n;
  let x = BigInt(Math.floor(Math.sqrt(Number(n))));
  while (x * x > n) x--;
  while ((x + 1n) * (x + 1n) <= n) x++;
  return x * x === n ? x : null;
}

function sqrtExact(r: R.Rat): R.Rat | null {
  const a = isqrt(r.n);
  const b = isqrt(r.d);
  return a !== null && b !== null ? R.rat(a, b) : null;
}

function factorial(n: Num): Num {
  if (n.exact?.d !== 1n || n.exact.n < 0n) return NAN;
  if (n.exact.n > 300n) return NAN;
  let acc = 1n;
  for (let i = 2n; i <= n.exact.n; i++) acc *= i;
  return exactNum(R.rat(acc));
}

function func(name: string, args: Val[]): Val {
  if (name === 'det') {
    const m = args[0];
    if (!m || !isMat(m)) throw new NotNumeric('det of a scalar');
    return determinant(m);
  }
  const xs = args.map((a) => {
    if (isMat(a)) throw new NotNumeric(`${name} of a matrix`);
    return a;
  });
  const x = xs[0];
  if (!x) throw new NotNumeric(`${name} without argument`);
  const f = x.f;
  switch (name) {
    case 'sqrt': {
      if (x.exact) {
        const s = sqrtExact(x.exact);
        if (s) return exactNum(s);
      }
      const r = Math.sqrt(f);
      return r === 0 ? floatNum(0, Math.sqrt(x.err)) : fn1(r, 1 / (2 * r), x);
    }
    case 'root': {
      const n = xs[1];
      if (!n) throw new NotNumeric('root index');
      return power(x, n.exact ? exactNum(R.div(R.rat(1n), n.exact)) : inverse(n));
    }
    case 'abs':
      return x.exact ? exactNum(x.exact.n < 0n ? R.neg(x.exact) : x.exact) : { ...x, f: Math.abs(f) };
    case 'fact':
      return factorial(x);
    case 'binom': {
      const k = xs[1];
      if (!k) throw new NotNumeric('binom');
      const a = factorial(x);
      const b = factorial(k);
      const c = x.exact && k.exact ? factorial(exactNum(R.sub(x.exact, k.exact))) : NAN;
      if (a.exact && b.exact && c.exact) return exactNum(R.div(a.exact, R.mul(b.exact, c.exact)));
      return NAN;
    }
    case 'floor':
      return x.exact ? exactNum(R.rat(floorDiv(x.exact.n, x.exact.d))) : step(Math.floor(f), x);
    case 'ceil':
      return x.exact ? exactNum(R.rat(-floorDiv(-x.exact.n, x.exact.d))) : step(Math.ceil(f), x);
    // slopes may be upper bounds (|cos| ≤ 1): the error stays a bound, and no second libm call
    case 'sin':
      return fn1(Math.sin(f), 1, x);
    case 'cos':
      return fn1(Math.cos(f), 1, x);
    case 'tan': {
      const t = Math.tan(f);
      return fn1(t, 1 + t * t, x);
    }
    case 'sec': {
      const r = 1 / Math.cos(f);
      return fn1(r, r * r, x);
    }
    case 'csc': {
      const r = 1 / Math.sin(f);
      return fn1(r, r * r, x);
    }
    case 'cot': {
      const c = 1 / Math.tan(f);
      return fn1(c, 1 + c * c, x);
    }
    case 'arcsin':
      return fn1(Math.asin(f), 1 / Math.sqrt(1 - f * f), x);
    case 'arccos':
      return fn1(Math.acos(f), 1 / Math.sqrt(1 - f * f), x);
    case 'arctan':
      return fn1(Math.atan(f), 1 / (1 + f * f), x);
    case 'sinh': {
      const r = Math.sinh(f);
      return fn1(r, Math.abs(r) + 1, x);
    }
    case 'cosh': {
      const r = Math.cosh(f);
      return fn1(r, r, x);
    }
    case 'tanh': {
      const t = Math.tanh(f);
      return fn1(t, 1 - t * t, x);
    }
    case 'ln':
    case 'log':
      return fn1(Math.log(f), 1 / f, x);
    case 'log10':
      return fn1(Math.log10(f), 1 / (f * Math.LN10), x);
    case 'logb': {
      const b = xs[1];
      if (!b) return NAN;
      const lb = fn1(Math.log(b.f), 1 / b.f, b);
      return binary(fn1(Math.log(f), 1 / f, x), inverse(lb), 'mul');
    }
    case 'exp': {
      const r = Math.exp(f);
      return fn1(r, r, x);
    }
    case 'max':
    case 'min': {
      const pick = name === 'max' ? Math.max : Math.min;
      return floatNum(pick(...xs.map((v) => v.f)), Math.max(...xs.map((v) => v.err)));
    }
    default:
      throw new NotNumeric(`no numeric rule for ${name}`);
  }
}

/** floor/ceil of a float: exact unless an integer lies within its error, where it could jump. */
function step(r: number, x: Num): Num {
  const near = Math.min(Math.abs(x.f - Math.floor(x.f)), Math.abs(Math.ceil(x.f) - x.f));
  return { exact: null, f: r, err: near <= x.err ? Number.POSITIVE_INFINITY : 0 };
}

function floorDiv(n: bigint, d: bigint): bigint {
  const q = n / d;
  return n % d !== 0n && n < 0n ? q - 1n : q;
}

function determinant(m: Mat): Num {
  const n = m.rows.length;
  if (n === 0 || m.rows.some((r) => r.length !== n) || n > 6) throw new NotNumeric('det shape');
  if (m.rows.every((r) => r.every((c) => c.exact)))
    return exactDeterminant(m.rows.map((r) => r.map((c) => c.exact as R.Rat)));
  const a = m.rows.map((r) => r.map((c) => c.f));
  // Hadamard's bound |det| ≤ Π‖row‖ scales both the elimination's rounding and the cells' errors
  let hadamard = 1;
  let relative = 8 * n * n * n * U;
  for (const r of m.rows) {
    const norm = Math.hypot(...r.map((c) => c.f));
    hadamard *= norm;
    if (norm > 0) relative += r.reduce((s, c) => s + c.err, 0) / norm;
  }
  let det = 1;
  for (let i = 0; i < n; i++) {
    let p = i;
    for (let r = i + 1; r < n; r++) if (Math.abs(a[r]?.[i] as number) > Math.abs(a[p]?.[i] as number)) p = r;
    if (p !== i) {
      [a[i], a[p]] = [a[p] as number[], a[i] as number[]];
      det = -det;
    }
    const piv = a[i]?.[i] as number;
    if (piv === 0) return floatNum(0, hadamard * relative);
    det *= piv;
    for (let r = i + 1; r < n; r++) {
      const k = (a[r]?.[i] as number) / piv;
      for (let c = i; c < n; c++) (a[r] as number[])[c] = (a[r]?.[c] as number) - k * (a[i]?.[c] as number);
    }
  }
  return floatNum(det, hadamard * relative);
}

/** Gaussian elimination over the rationals (n ≤ 6, so the sizes stay small). */
function exactDeterminant(rows: R.Rat[][]): Num {
  const a = rows.map((r) => [...r]);
  const n = a.length;
  let det = R.rat(1n);
  for (let i = 0; i < n; i++) {
    const p = a.findIndex((r, k) => k >= i && (r[i] as R.Rat).n !== 0n);
    if (p < 0) return exactNum(R.rat(0n));
    if (p !== i) {
      [a[i], a[p]] = [a[p] as R.Rat[], a[i] as R.Rat[]];
      det = R.neg(det);
    }
    const row = a[i] as R.Rat[];
    const piv = row[i] as R.Rat;
    det = R.mul(det, piv);
    for (let r = i + 1; r < n; r++) {
      const cur = a[r] as R.Rat[];
      const k = R.div(cur[i] as R.Rat, piv);
      if (k.n === 0n) continue;
      for (let c = i; c < n; c++) cur[c] = R.sub(cur[c] as R.Rat, R.mul(k, row[c] as R.Rat));
    }
  }
  return exactNum(det);
}

export { isMat };
