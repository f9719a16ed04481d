import type { Deadline } from '../deadline.js';
import type { Node } from '../latex/ast.js';

/** Free symbol names of an expression (`e` is Euler's number, not a symbol). */
export function symbolsOf(n: Node, out: Set<string> = new Set()): Set<string> {
  switch (n.k) {
    case 'sym':
      if (n.name !== 'e') out.add(n.name);
      break;
    case 'add':
      for (const t of n.terms) symbolsOf(t.x, out);
      break;
    case 'mul':
      for (const f of n.fs) symbolsOf(f, out);
      break;
    case 'div':
      symbolsOf(n.a, out);
      symbolsOf(n.b, out);
      break;
    case 'pow':
      symbolsOf(n.b, out);
      symbolsOf(n.e, out);
      break;
    case 'fn':
      for (const a of n.args) symbolsOf(a, out);
      break;
    case 'pct':
      symbolsOf(n.x, out);
      break;
    case 'matrix':
      for (const r of n.rows) for (const c of r) symbolsOf(c, out);
      break;
    case 'rel':
    case 'setop':
      for (const p of n.parts) symbolsOf(p, out);
      break;
    case 'tuple':
    case 'set':
    case 'list':
      for (const p of n.items) symbolsOf(p, out);
      break;
    default:
      break;
  }
  return out;
}

/** Deterministic magnitudes for numeric identity tests: non-integer, spread out. */
const POINTS = [0.5772, 1.4151, 2.2361, 0.8415, 1.7327, 2.7191, 0.6937, 1.3863];
/** The first samples are all positive (where √x and ln x live); the rest mix in negatives, so |x| ≠ x. */
const POSITIVE_SAMPLES = 6;

export const SAMPLE_COUNT = 10;

/** The i-th sample assignment: each symbol gets a different point so that x and y are told apart. */
export function sampleEnv(names: string[], i: number, deadline: Deadline): Map<string, number> {
  deadline.check();
  const env = new Map<string, number>();
  names.forEach((name, j) => {
    const magnitude = (POINTS[(i + 3 * j) % POINTS.length] as number) * (1 + 0.137 * j);
    const negative = i >= POSITIVE_SAMPLES && (i + j) % 2 === 0;
    env.set(name, negative ? -magnitude : magnitude);
  });
  return env;
}
