import type { Deadline } from '../deadline.js';
import type { Node, TermSign } from '../latex/ast.js';
import { evaluate, NotNumeric } from './evaluate.js';
import * as R from './rational.js';

const NO_SYMBOLS = new Map();

/**
 * The expression to evaluate at many sample points, with the work that is the same at every point
 * done once: each subexpression without free symbols whose value is an exact rational becomes
 * that number (`\frac{2}{7}`, `-5`, `3^2`), and division by such a number becomes multiplication
 * by its inverse, so a double sample point meets no BigInt arithmetic. Values are unchanged (the
 * folded parts are computed by `evaluate` itself); only the evaluation tree differs, never the
 * nodes that comparisons read for written decimals.
 */
export function foldConstants(node: Node, deadline: Deadline): Node {
  deadline.check();
  let out: Node;
  switch (node.k) {
    case 'add':
      out = { k: 'add', terms: node.terms.map((t) => foldTerm(t.sign, foldConstants(t.x, deadline))) };
      if (node.terms.some((t) => t.sign === 'pm' || t.sign === 'mp')) return out;
      break;
    case 'mul':
      out = { ...node, fs: node.fs.map((f) => foldConstants(f, deadline)) };
      break;
    case 'div': {
      const a = foldConstants(node.a, deadline);
      const b = foldConstants(node.b, deadline);
      if (a.k !== 'num' && b.k === 'num' && b.v.n !== 0n)
        return { k: 'mul', fs: [a, literal(R.div(R.rat(1n), b.v))] };
      out = { ...node, a, b };
      break;
    }
    case 'pow':
      out = { k: 'pow', b: foldConstants(node.b, deadline), e: foldConstants(node.e, deadline) };
      break;
    case 'fn':
      out = { ...node, args: node.args.map((a) => foldConstants(a, deadline)) };
      break;
    default:
      return node;
  }
  return allNumbers(out) ? (exactValue(out, deadline) ?? out) : out;
}

function allNumbers(n: Node): boolean {
  switch (n.k) {
    case 'add':
      return n.terms.every((t) => t.x.k === 'num');
    case 'mul':
      return n.fs.every((f) => f.k === 'num');
    case 'div':
      return n.a.k === 'num' && n.b.k === 'num';
    case 'pow':
      return n.b.k === 'num' && n.e.k === 'num';
    case 'fn':
      return n.args.every((a) => a.k === 'num');
    default:
      return false;
  }
}

function exactValue(n: Node, deadline: Deadline): Node | null {
  try {
    const v = evaluate(n, NO_SYMBOLS, deadline);
    return 'rows' in v || v.exact === null || R.isHuge(v.exact) ? null : literal(v.exact);
  } catch (e) {
    if (e instanceof NotNumeric || e instanceof RangeError) return null;
    throw e;
  }
}

const literal = (v: R.Rat): Node => ({ k: 'num', v, dec: null });

/** A subtracted number becomes an added negative one: no negation at each point. */
function foldTerm(sign: TermSign, x: Node): { sign: TermSign; x: Node } {
  return sign === -1 && x.k === 'num' ? { sign: 1, x: literal(R.neg(x.v)) } : { sign, x };
}
