import type { Node } from '../latex/ast.js';
import { LIMITS } from '../limits.js';

function hasPm(n: Node): boolean {
  switch (n.k) {
    case 'add':
      return n.terms.some((t) => t.sign === 'pm' || t.sign === 'mp' || hasPm(t.x));
    case 'mul':
      return n.fs.some(hasPm);
    case 'div':
      return hasPm(n.a) || hasPm(n.b);
    case 'pow':
      return hasPm(n.b) || hasPm(n.e);
    case 'fn':
      return n.args.some(hasPm);
    case 'pct':
      return hasPm(n.x);
    default:
      return false;
  }
}

function choose(n: Node, plus: boolean): Node {
  switch (n.k) {
    case 'add':
      return {
        k: 'add',
        terms: n.terms.map((t) => ({
          sign: t.sign === 'pm' ? (plus ? 1 : -1) : t.sign === 'mp' ? (plus ? -1 : 1) : t.sign,
          x: choose(t.x, plus),
        })),
      };
    case 'mul':
      return { ...n, fs: n.fs.map((f) => choose(f, plus)) };
    case 'div':
      return { ...n, a: choose(n.a, plus), b: choose(n.b, plus) };
    case 'pow':
      return { k: 'pow', b: choose(n.b, plus), e: choose(n.e, plus) };
    case 'fn':
      return { ...n, args: n.args.map((a) => choose(a, plus)) };
    case 'pct':
      return { k: 'pct', x: choose(n.x, plus) };
    default:
      return n;
  }
}

/**
 * `1 \pm \sqrt{19}` → [1 + √19, 1 − √19]. All ± in one expression move together (∓ opposite),
 * which is how answers use them; `LIMITS.maxPlusMinus` bounds the work.
 */
export function expandPm(n: Node): Node[] {
  if (!hasPm(n)) return [n];
  return [choose(n, true), choose(n, false)].slice(0, 2 ** LIMITS.maxPlusMinus);
}
