import type { Deadline } from '../deadline.js';
import type { Node } from '../latex/ast.js';
import * as R from './rational.js';

/** A number: exact when every step so far was exact, always with its float value. */
export interface Num {
  readonly exact: R.Rat | null;
  readonly f: number;
}
export interface Mat {
  readonly rows: Num[][];
}
export type Val = Num | Mat;

/** Raised for nodes that have no numeric value (sets, relations, text). */
export class NotNumeric extends Error {
  override readonly name = 'NotNumeric';
}

const exactNum = (r: R.Rat): Num => ({ exact: r, f: R.toNumber(r) });
/** Overflow is not infinity: only `\\infty` itself may be infinite, so 10^{10^{10}} ≠ 10^{10^{10}}+1. */
const floatNum = (f: number): Num => ({ exact: null, f: Number.isFinite(f) ? f : Number.NaN });
const INFINITY: Num = { exact: null, f: Number.POSITIVE_INFINITY };
const isMat = (v: Val): v is Mat => 'rows' in v;

/** Symbol values for sampling; `e` is Euler's number unless the caller binds it. */
export type Env = ReadonlyMap<string, number>;

export function evaluate(node: Node, env: Env, deadline: Deadline): Val {
  deadline.check();
  switch (node.k) {
    case 'num':
      return exactNum(node.v);
    case 'sym': {
      const v = env.get(node.name);
      if (v !== undefined) return floatNum(v);
      if (node.name === 'e') return floatNum(Math.E);
      throw new NotNumeric(`unbound symbol ${node.name}`);
    }
    case 'const':
      if (node.name === 'pi') return floatNum(Math.PI);
      if (node.name === 'e') return floatNum(Math.E);
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
const negNum = (a: Num): Num => (a.exact ? exactNum(R.neg(a.exact)) : { exact: null, f: -a.f });

function inverse(b: Num): Num {
  if (b.exact) {
    if (b.exact.n === 0n) return floatNum(Number.NaN);
    return exactNum(R.div(R.rat(1n), b.exact));
  }
  return floatNum(1 / b.f);
}

function numOp(a: Num, b: Num, op: 'add' | 'mul'): Num {
  if (a.exact && b.exact && !R.isHuge(a.exact) && !R.isHuge(b.exact))
    return exactNum(op === 'add' ? R.add(a.exact, b.exact) : R.mul(a.exact, b.exact));
  const f = op === 'add' ? a.f + b.f : a.f * b.f;
  // arithmetic on a real infinity (from \\infty) stays infinite; overflow of finite values does not
  if (!Number.isFinite(a.f) || !Number.isFinite(b.f)) return { exact: null, f };
  return floatNum(f);
}

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
  return floatNum(realPow(b.f, e.f, e.exact));
}

/** Real powers, including odd roots of negatives written as x^{1/3}. */
function realPow(b: number, e: number, exact: R.Rat | null): number {
  if (b < 0 && exact && exact.d % 2n === 1n) {
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
  if (n.exact?.d !== 1n || n.exact.n < 0n) return floatNum(Number.NaN);
  if (n.exact.n > 300n) return floatNum(Number.NaN);
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
      return floatNum(Math.sqrt(f));
    }
    case 'root': {
      const n = xs[1];
      if (!n) throw new NotNumeric('root index');
      return power(x, n.exact ? exactNum(R.div(R.rat(1n), n.exact)) : floatNum(1 / n.f));
    }
    case 'abs':
      return x.exact ? exactNum(x.exact.n < 0n ? R.neg(x.exact) : x.exact) : floatNum(Math.abs(f));
    case 'fact':
      return factorial(x);
    case 'binom': {
      const k = xs[1];
      if (!k) throw new NotNumeric('binom');
      const a = factorial(x);
      const b = factorial(k);
      const c = x.exact && k.exact ? factorial(exactNum(R.sub(x.exact, k.exact))) : floatNum(Number.NaN);
      if (a.exact && b.exact && c.exact) return exactNum(R.div(a.exact, R.mul(b.exact, c.exact)));
      return floatNum(Number.NaN);
    }
    case 'floor':
      return x.exact ? exactNum(R.rat(floorDiv(x.exact.n, x.exact.d))) : floatNum(Math.floor(f));
    case 'ceil':
      return x.exact ? exactNum(R.rat(-floorDiv(-x.exact.n, x.exact.d))) : floatNum(Math.ceil(f));
    case 'sin':
      return floatNum(Math.sin(f));
    case 'cos':
      return floatNum(Math.cos(f));
    case 'tan':
      return floatNum(Math.tan(f));
    case 'sec':
      return floatNum(1 / Math.cos(f));
    case 'csc':
      return floatNum(1 / Math.sin(f));
    case 'cot':
      return floatNum(1 / Math.tan(f));
    case 'arcsin':
      return floatNum(Math.asin(f));
    case 'arccos':
      return floatNum(Math.acos(f));
    case 'arctan':
      return floatNum(Math.atan(f));
    case 'sinh':
      return floatNum(Math.sinh(f));
    case 'cosh':
      return floatNum(Math.cosh(f));
    case 'tanh':
      return floatNum(Math.tanh(f));
    case 'ln':
    case 'log':
      return floatNum(Math.log(f));
    case 'log10':
      return floatNum(Math.log10(f));
    case 'logb': {
      const b = xs[1];
      return floatNum(b ? Math.log(f) / Math.log(b.f) : Number.NaN);
    }
    case 'exp':
      return floatNum(Math.exp(f));
    case 'max':
      return floatNum(Math.max(...xs.map((v) => v.f)));
    case 'min':
      return floatNum(Math.min(...xs.map((v) => v.f)));
    default:
      throw new NotNumeric(`no numeric rule for ${name}`);
  }
}

function floorDiv(n: bigint, d: bigint): bigint {
  const q = n / d;
  return n % d !== 0n && n < 0n ? q - 1n : q;
}

function determinant(m: Mat): Num {
  const n = m.rows.length;
  if (n === 0 || m.rows.some((r) => r.length !== n) || n > 6) throw new NotNumeric('det shape');
  const a = m.rows.map((r) => r.map((c) => c.f));
  let det = 1;
  for (let i = 0; i < n; i++) {
    let p = i;
    for (let r = i + 1; r < n; r++) if (Math.abs(a[r]?.[i] as number) > Math.abs(a[p]?.[i] as number)) p = r;
    if (p !== i) {
      [a[i], a[p]] = [a[p] as number[], a[i] as number[]];
      det = -det;
    }
    const piv = a[i]?.[i] as number;
    if (piv === 0) return floatNum(0);
    det *= piv;
    for (let r = i + 1; r < n; r++) {
      const k = (a[r]?.[i] as number) / piv;
      for (let c = i; c < n; c++) (a[r] as number[])[c] = (a[r]?.[c] as number) - k * (a[i]?.[c] as number);
    }
  }
  return floatNum(det);
}

export { isMat };
