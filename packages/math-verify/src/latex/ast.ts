import type { Rat } from '../math/rational.js';

/** Sign of one term of a sum: +, -, or the ± / ∓ that expand into two alternatives. */
export type TermSign = 1 | -1 | 'pm' | 'mp';

export type RelOp = '=' | '<' | '<=' | '>' | '>=' | '!=' | '~' | 'in';

/** Parsed answer. `dec` on numbers is the count of written decimals (null for integers/exact). */
export type Node =
  | { k: 'num'; v: Rat; dec: number | null }
  | { k: 'sym'; name: string }
  | { k: 'const'; name: 'pi' | 'e' | 'inf' | 'empty' }
  | { k: 'add'; terms: { sign: TermSign; x: Node }[] }
  | { k: 'mul'; fs: Node[]; call?: boolean }
  | { k: 'div'; a: Node; b: Node; ratio?: boolean }
  | { k: 'pow'; b: Node; e: Node }
  | { k: 'fn'; name: string; args: Node[]; power?: Node }
  | { k: 'pct'; x: Node }
  | { k: 'text'; s: string }
  | { k: 'tuple'; open: '(' | '['; close: ')' | ']'; items: Node[] }
  | { k: 'set'; items: Node[] }
  | { k: 'list'; items: Node[] }
  | { k: 'matrix'; rows: Node[][] }
  | { k: 'rel'; ops: RelOp[]; parts: Node[] }
  | { k: 'setop'; op: 'cup' | 'cap' | 'minus'; parts: Node[] };

export const num = (v: Rat, dec: number | null = null): Node => ({ k: 'num', v, dec });
