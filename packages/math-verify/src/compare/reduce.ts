import type { Node, RelOp } from '../latex/ast.js';

/**
 * Names a thing rather than computes one: `x`, `a_3`, `f(x)`, `|AB|`, `A:B`, `(p,q,r)`.
 * `x = 3` reduces to `3` only when its left side is such a name, so `7 = 11a + c` stays an equation.
 */
export function isVariableLike(n: Node): boolean {
  switch (n.k) {
    case 'sym':
      return n.name !== 'e';
    case 'mul':
      if (n.call) return n.fs[0]?.k === 'sym';
      return n.fs.every((f) => f.k === 'sym');
    case 'fn':
      return n.name === 'abs' && n.args.length === 1 && isVariableLike(n.args[0] as Node);
    case 'div':
      return isVariableLike(n.a) && isVariableLike(n.b);
    case 'tuple':
      return n.items.every(isVariableLike);
    default:
      return false;
  }
}

export function hasSymbols(n: Node): boolean {
  switch (n.k) {
    case 'sym':
      return n.name !== 'e';
    case 'num':
    case 'const':
    case 'text':
      return false;
    case 'add':
      return n.terms.some((t) => hasSymbols(t.x));
    case 'mul':
      return n.fs.some(hasSymbols);
    case 'div':
      return hasSymbols(n.a) || hasSymbols(n.b);
    case 'pow':
      return hasSymbols(n.b) || hasSymbols(n.e);
    case 'fn':
      return n.args.some(hasSymbols);
    case 'pct':
      return hasSymbols(n.x);
    case 'matrix':
      return n.rows.some((r) => r.some(hasSymbols));
    case 'rel':
      return n.parts.some(hasSymbols);
    default:
      return true;
  }
}

/** A relation reduced for comparison. */
export type Reduced =
  | { k: 'value'; value: Node; name: Node | null; equation: Node | null }
  | { k: 'equation'; lhs: Node; rhs: Node }
  | { k: 'inequality'; parts: Node[]; ops: RelOp[] }
  | { k: 'other'; node: Node };

const EQ: RelOp[] = ['=', '~'];

/**
 * Equality chains: `x = 5+5+1 = 11` → 11; `1/2 = 10/9` → 10/9; `x = 1/3 \approx 0.33` → 1/3
 * (an approximation is never the answer unless it is all there is, as in `x \approx 11`).
 * `x \in [a, b]` → the interval. Other relations stay relations.
 */
export function reduceRelation(n: Node & { k: 'rel' }): Reduced {
  let parts = n.parts;
  let ops = n.ops;
  if (ops.length === 1 && ops[0] === 'in' && isVariableLike(parts[0] as Node))
    return { k: 'value', value: parts[1] as Node, name: parts[0] as Node, equation: null };
  if (ops.every((o) => EQ.includes(o))) {
    const k = ops.indexOf('~');
    if (k >= 0) {
      const before = parts[k] as Node;
      const cut = k === 0 && isVariableLike(before) ? k + 2 : k + 1;
      parts = parts.slice(0, cut);
      ops = ops.slice(0, cut - 1);
    }
    const first = parts[0] as Node;
    const last = parts[parts.length - 1] as Node;
    if (parts.length === 1) return { k: 'value', value: first, name: null, equation: null };
    const named = isVariableLike(first);
    if (!hasSymbols(last) && (named || !hasSymbols(first) || parts.length > 2))
      return { k: 'value', value: last, name: named ? first : null, equation: null };
    const lhs = parts[parts.length - 2] as Node;
    if (named)
      return { k: 'value', value: last, name: first, equation: { k: 'rel', ops: ['='], parts: [lhs, last] } };
    return { k: 'equation', lhs, rhs: last };
  }
  if (ops.every((o) => o === '<' || o === '<=' || o === '>' || o === '>=' || o === '!='))
    return { k: 'inequality', parts, ops };
  return { k: 'other', node: n };
}
