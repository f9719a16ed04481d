import { createRequire } from 'node:module';
import type { Deadline } from './deadline.js';
import { normalizeAnswer } from './latex/normalize.js';

/** The part of @cortex-js/compute-engine we use. */
interface BoxedExpression {
  readonly isValid: boolean;
  readonly freeVariables: readonly string[];
  N(): BoxedExpression;
  readonly re: number;
  readonly im: number;
  isSame(other: BoxedExpression): boolean;
  isEqual(other: BoxedExpression): boolean | undefined;
}
interface Engine {
  parse(latex: string): BoxedExpression;
}

/** Only short answers reach the CAS: its cost grows with the input and cannot be interrupted. */
export const CAS_MAX_CHARS = 160;
/** Big exponents make the CAS compute huge integers (it threw "Maximum BigInt size" on 10^{10^{10}}). */
const RISKY = /\^\s*\{?\s*-?\d{3,}|\^\s*\{[^{}]*\^|!\s*!|\d{7,}\s*!/;

let engine: Engine | null | undefined;

/** Loads compute-engine on first use (about 0.3 s once); null when it is not installed. */
function getEngine(): Engine | null {
  if (engine !== undefined) return engine;
  try {
    const req = createRequire(import.meta.url);
    const mod = req('@cortex-js/compute-engine') as { ComputeEngine: new () => Engine };
    engine = new mod.ComputeEngine();
  } catch {
    engine = null;
  }
  return engine;
}

/**
 * Second opinion for answers our parser cannot read: both sides parsed by compute-engine, equal
 * when both are closed-form numbers that agree to 1e-9 or the CAS finds them the same. Returns
 * null when it cannot decide. Guarded by size and exponent checks and the remaining budget.
 */
export function casEqual(gold: string, pred: string, deadline: Deadline): boolean | null {
  const g = normalizeAnswer(gold);
  const p = normalizeAnswer(pred);
  if (g.length > CAS_MAX_CHARS || p.length > CAS_MAX_CHARS || RISKY.test(g) || RISKY.test(p)) return null;
  if (deadline.remainingMs() < 5) return null;
  const ce = getEngine();
  if (!ce) return null;
  try {
    const a = ce.parse(g);
    const b = ce.parse(p);
    if (!a.isValid || !b.isValid) return null;
    if (a.isSame(b)) return true;
    if (a.freeVariables.length === 0 && b.freeVariables.length === 0) {
      const x = a.N();
      const y = b.N();
      if (!Number.isFinite(x.re) || !Number.isFinite(y.re)) return null;
      const scale = Math.max(1, Math.abs(x.re), Math.abs(y.re));
      return Math.abs(x.re - y.re) <= 1e-9 * scale && Math.abs(x.im - y.im) <= 1e-9 * scale;
    }
    return a.isEqual(b) === true ? true : null;
  } catch {
    return null;
  }
}

/** Warms the CAS up (module load and first-parse JIT) outside any timed call. */
export function warmCas(): boolean {
  const ce = getEngine();
  if (!ce) return false;
  ce.parse('\\frac{1}{2}+x').N();
  return true;
}
