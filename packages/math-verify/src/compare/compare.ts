import type { Deadline } from '../deadline.js';
import type { Node } from '../latex/ast.js';
import { canonicalNode } from '../latex/serialize.js';
import {
  type Env,
  evaluate,
  inverse,
  isMat,
  NotNumeric,
  type Num,
  numOp,
  type Val,
} from '../math/evaluate.js';
import * as R from '../math/rational.js';
import { enterMemo, leaveMemo } from '../memo.js';
import { expandPm } from './expand.js';
import { decidable, floatsAgree, isZero, numbersClose } from './numbers.js';
import { hasSymbols, isVariableLike, type Reduced, reduceRelation } from './reduce.js';
import { createSampler, SAMPLE_COUNT, symbolsOf } from './sample.js';

export interface CompareOptions {
  deadline: Deadline;
  /** Accept an inequality answer for an interval gold (Math-Verify's allow_set_relation_comp). */
  allowSetRelation: boolean;
  /** Decimal places both numbers are rounded to when either is a written decimal (float_rounding). */
  floatRounding: number;
}

/** Is `pred` mathematically the same answer as `gold`? Gold and prediction are not symmetric. */
export function answersEqual(gold: Node, pred: Node, o: CompareOptions): boolean {
  enterMemo();
  try {
    return equalAnswers(gold, pred, o);
  } finally {
    leaveMemo();
  }
}

function equalAnswers(gold: Node, pred: Node, o: CompareOptions): boolean {
  o.deadline.check();
  if (gold.k === 'pct' || pred.k === 'pct') {
    if (scalarEqual(gold, pred, o)) return true;
    return equalAnswers(unPct(gold), unPct(pred), o);
  }
  if (gold.k === 'rel' || pred.k === 'rel') return relationsEqual(gold, pred, o);
  if (isCollection(gold) || isCollection(pred)) return collectionsEqual(gold, pred, o);
  if (gold.k === 'setop' || pred.k === 'setop') return setOpsEqual(gold, pred, o);
  if (gold.k === 'text' || pred.k === 'text') return textOf(gold) !== null && textOf(gold) === textOf(pred);
  return scalarEqual(gold, pred, o);
}

/** A list, a set, or one answer with ± (two answers). */
function isMulti(n: Node): boolean {
  return n.k === 'list' || n.k === 'set' || expandPm(n).length > 1;
}

const unPct = (n: Node): Node => (n.k === 'pct' ? n.x : n);
const isCollection = (n: Node): boolean => n.k === 'list' || n.k === 'set' || n.k === 'tuple';

function textOf(n: Node): string | null {
  if (n.k === 'text')
    return n.s
      .replace(/\s+/g, ' ')
      .trim()
      .replace(/^\((.*)\)$/, '$1')
      .toLowerCase();
  if (n.k === 'sym') return n.name.toLowerCase();
  if (n.k === 'mul' && !n.call && n.fs.every((f) => f.k === 'sym'))
    return n.fs
      .map((f) => (f as { name: string }).name)
      .join('')
      .toLowerCase();
  return null;
}

function reduce(n: Node): Reduced {
  if (n.k === 'rel') return reduceRelation(n);
  return { k: 'value', value: n, name: null, equation: null };
}

function relationsEqual(gold: Node, pred: Node, o: CompareOptions): boolean {
  const g = reduce(gold);
  const p = reduce(pred);
  if (g.k === 'value' && p.k === 'value') {
    if (equalAnswers(g.value, p.value, o)) return true;
    return g.equation !== null && p.equation !== null && equationsEqual(g.equation, p.equation, o);
  }
  const ge = g.k === 'equation' ? eqNode(g.lhs, g.rhs) : g.k === 'value' ? g.equation : null;
  const pe = p.k === 'equation' ? eqNode(p.lhs, p.rhs) : p.k === 'value' ? p.equation : null;
  if ((g.k === 'equation' || p.k === 'equation') && ge && pe) return equationsEqual(ge, pe, o);
  if (g.k === 'inequality' && p.k === 'inequality') return inequalitiesEqual(g, p, o);
  // Asymmetry kept from Math-Verify: an inequality gold accepts the interval, not the reverse.
  if (g.k === 'inequality' && p.k === 'value') {
    const interval = toInterval(g);
    return interval !== null && equalAnswers(interval, p.value, o);
  }
  if (o.allowSetRelation && g.k === 'value' && p.k === 'inequality') {
    const interval = toInterval(p);
    return interval !== null && equalAnswers(g.value, interval, o);
  }
  if (g.k === 'other' && p.k === 'other') return canonicalNode(g.node) === canonicalNode(p.node);
  return false;
}

const eqNode = (lhs: Node, rhs: Node): Node => ({ k: 'rel', ops: ['='], parts: [lhs, rhs] });
const difference = (a: Node, b: Node): Node => ({
  k: 'add',
  terms: [
    { sign: 1, x: a },
    { sign: -1, x: b },
  ],
});

/** l1 = r1 and l2 = r2 are the same equation when l1 − r1 = c (l2 − r2) for a constant c ≠ 0. */
function equationsEqual(a: Node, b: Node, o: CompareOptions): boolean {
  if (a.k !== 'rel' || b.k !== 'rel') return false;
  const [l1, r1] = a.parts.slice(-2) as [Node, Node];
  const [l2, r2] = b.parts.slice(-2) as [Node, Node];
  return proportional(difference(l1, r1), difference(l2, r2), 'any', o);
}

interface Constraint {
  d: Node;
  kind: 'strict' | 'weak' | 'ne';
}

function constraints(parts: Node[], ops: string[]): Constraint[] {
  return ops.map((op, i) => {
    const l = parts[i] as Node;
    const r = parts[i + 1] as Node;
    // every constraint as d > 0, d >= 0 or d != 0
    if (op === '<') return { d: difference(r, l), kind: 'strict' };
    if (op === '<=') return { d: difference(r, l), kind: 'weak' };
    if (op === '>') return { d: difference(l, r), kind: 'strict' };
    if (op === '>=') return { d: difference(l, r), kind: 'weak' };
    return { d: difference(l, r), kind: 'ne' };
  });
}

function inequalitiesEqual(
  g: { parts: Node[]; ops: string[] },
  p: { parts: Node[]; ops: string[] },
  o: CompareOptions,
): boolean {
  const gc = constraints(g.parts, g.ops);
  const pc = constraints(p.parts, p.ops);
  if (gc.length !== pc.length) return false;
  const used = new Set<number>();
  return gc.every((a) => {
    const j = pc.findIndex(
      (b, idx) =>
        !used.has(idx) &&
        a.kind === b.kind &&
        proportional(a.d, b.d, a.kind === 'ne' ? 'any' : 'positive', o),
    );
    if (j < 0) return false;
    used.add(j);
    return true;
  });
}

const NEG_INF: Node = { k: 'add', terms: [{ sign: -1, x: { k: 'const', name: 'inf' } }] };
const POS_INF: Node = { k: 'const', name: 'inf' };

/** `a < x <= b` → (a, b]; `x >= 5` → [5, ∞). Null when the relation is not about one variable. */
function toInterval(r: { parts: Node[]; ops: string[] }): Node | null {
  const { parts, ops } = r;
  const flip: Record<string, string> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=' };
  if (ops.length === 1) {
    let [l, r2] = parts as [Node, Node];
    let op = ops[0] as string;
    if (!isVariableLike(l) && isVariableLike(r2)) {
      [l, r2] = [r2, l];
      op = flip[op] ?? op;
    }
    if (!isVariableLike(l) || hasSymbols(r2)) return null;
    if (op === '<') return { k: 'tuple', open: '(', close: ')', items: [NEG_INF, r2] };
    if (op === '<=') return { k: 'tuple', open: '(', close: ']', items: [NEG_INF, r2] };
    if (op === '>') return { k: 'tuple', open: '(', close: ')', items: [r2, POS_INF] };
    if (op === '>=') return { k: 'tuple', open: '[', close: ')', items: [r2, POS_INF] };
    return null;
  }
  if (ops.length !== 2) return null;
  const [a, x, b] = parts as [Node, Node, Node];
  if (!isVariableLike(x) || hasSymbols(a) || hasSymbols(b)) return null;
  const up = ops.every((op) => op === '<' || op === '<=');
  const down = ops.every((op) => op === '>' || op === '>=');
  if (up)
    return { k: 'tuple', open: ops[0] === '<' ? '(' : '[', close: ops[1] === '<' ? ')' : ']', items: [a, b] };
  if (down)
    return { k: 'tuple', open: ops[1] === '>' ? '(' : '[', close: ops[0] === '>' ? ')' : ']', items: [b, a] };
  return null;
}

const NO_SYMBOLS: Env = new Map();

/** The sampler of a comparison with free symbols; null for constants (one point, no symbols). */
const samplerFor = (names: string[], a: Node, b: Node): ((i: number) => Env) | null =>
  names.length === 0 ? null : createSampler(names, a, b);

/** The free symbols of both sides, gold's first (the order the sampler draws them in). */
function namesOf(a: Node, b: Node): string[] {
  const sa = symbolsOf(a);
  const sb = symbolsOf(b);
  if (sb.size === 0) return [...sa];
  return [...new Set([...sa, ...sb])];
}

/**
 * a = c·b at every sample point for one constant c (c ≠ 0; c > 0 when sign matters). A point
 * where one side is defined and the other is not is a disagreement.
 */
function proportional(a: Node, b: Node, sign: 'any' | 'positive', o: CompareOptions): boolean {
  const names = namesOf(a, b);
  let ratio: Num | null = null;
  let valid = 0;
  const sampler = samplerFor(names, a, b);
  for (let i = 0; i < (sampler ? SAMPLE_COUNT : 1); i++) {
    o.deadline.check();
    const env = sampler ? sampler(i) : NO_SYMBOLS;
    const va = scalarValue(a, env, o);
    const vb = scalarValue(b, env, o);
    if (va === null || vb === null) {
      if (va !== vb) return false;
      continue;
    }
    if (!decidable(va) || !decidable(vb)) continue; // no usable precision at this point
    const za = isZero(va);
    const zb = isZero(vb);
    if (za && zb) continue;
    if (za || zb) return false;
    const r = numOp(va, inverse(vb), 'mul');
    if (ratio === null) ratio = r;
    else if (!(ratio.exact && r.exact ? R.eq(ratio.exact, r.exact) : floatsAgree(ratio, r))) return false;
    valid++;
  }
  if (ratio === null || valid < Math.min(3, names.length === 0 ? 1 : 3)) return false;
  return sign === 'any' || ratio.f > 0;
}

/** A finite number, or null where the expression is undefined (or not a number). */
function scalarValue(n: Node, env: Env, o: CompareOptions): Num | null {
  const v = valueAt(n, env, o);
  if (v === null || isMat(v) || !Number.isFinite(v.f)) return null;
  return v;
}

function valueAt(n: Node, env: Env, o: CompareOptions): Val | null {
  try {
    return evaluate(n, env, o.deadline);
  } catch (e) {
    if (e instanceof NotNumeric || e instanceof RangeError) return null;
    throw e;
  }
}

/** Items of a list/set with ± expanded and nested lists flattened. */
function items(n: Node): Node[] {
  const raw = n.k === 'list' || n.k === 'set' ? n.items : [n];
  return raw.flatMap((x) => (x.k === 'list' ? items(x) : expandPm(x)));
}

function itemEqual(g: Node, p: Node, o: CompareOptions): boolean {
  if (g.k === 'rel' && p.k === 'rel') {
    const gr = reduceRelation(g);
    const pr = reduceRelation(p);
    if (
      gr.k === 'value' &&
      pr.k === 'value' &&
      gr.name &&
      pr.name &&
      canonicalNode(gr.name) !== canonicalNode(pr.name)
    )
      return false;
  }
  return equalAnswers(g, p, o);
}

/** Same elements both ways (duplicates collapse, order ignored); each pair is compared once. */
function sameSet(gs: Node[], ps: Node[], o: CompareOptions): boolean {
  // 0: not compared yet, 1: equal, 2: not equal (plain loops: no closure per item on this hot path)
  const memo = new Uint8Array(gs.length * ps.length);
  for (let i = 0; i < gs.length; i++) {
    let found = false;
    for (let j = 0; j < ps.length && !found; j++) found = memoEqual(gs, ps, o, memo, i, j);
    if (!found) return false;
  }
  for (let j = 0; j < ps.length; j++) {
    let found = false;
    for (let i = 0; i < gs.length && !found; i++) found = memoEqual(gs, ps, o, memo, i, j);
    if (!found) return false;
  }
  return true;
}

function memoEqual(
  gs: Node[],
  ps: Node[],
  o: CompareOptions,
  memo: Uint8Array,
  i: number,
  j: number,
): boolean {
  const k = i * ps.length + j;
  if (memo[k] === 0) memo[k] = itemEqual(gs[i] as Node, ps[j] as Node, o) ? 1 : 2;
  return memo[k] === 1;
}

function collectionsEqual(gold: Node, pred: Node, o: CompareOptions): boolean {
  if (gold.k === 'tuple') {
    if (pred.k === 'tuple') {
      if (gold.items.length !== pred.items.length) return false;
      if (gold.open !== pred.open || gold.close !== pred.close) return false;
      return gold.items.every((g, i) => equalAnswers(g, pred.items[i] as Node, o));
    }
    // (1,3) against {1,3}: the order must still match
    if (pred.k === 'list' && gold.open === '(' && gold.close === ')')
      return (
        gold.items.length === pred.items.length &&
        gold.items.every((g, i) => equalAnswers(g, pred.items[i] as Node, o))
      );
    return false;
  }
  // x = \pm 2 is the two-element answer {-2, 2}, in either direction
  if (isMulti(gold) && isMulti(pred)) return sameSet(items(gold), items(pred), o);
  // A single gold answer is never matched by a list of candidates.
  return false;
}

function setOpsEqual(gold: Node, pred: Node, o: CompareOptions): boolean {
  if (gold.k !== 'setop' || pred.k !== 'setop' || gold.op !== pred.op) return false;
  if (gold.parts.length !== pred.parts.length) return false;
  return sameSet(gold.parts, pred.parts, o);
}

function scalarEqual(gold: Node, pred: Node, o: CompareOptions): boolean {
  const gs = expandPm(gold);
  const ps = expandPm(pred);
  if (gs.length > 1 || ps.length > 1) {
    if (gs.length !== ps.length) return false;
    return (
      gs.every((g) => ps.some((p) => scalarEqual(g, p, o))) &&
      ps.every((p) => gs.some((g) => scalarEqual(g, p, o)))
    );
  }
  if (gold.k === 'matrix' && pred.k === 'matrix') return cellsEqual(gold.rows, pred.rows, o);
  // evaluated as written at every point: folding constant parts into literals first (tried during issue
  // 23) built a copy of each side per comparison and cost more than the BigInt steps it saved (literals
  // are converted once per comparison, evaluate's memo; small rationals take the double path)
  const names = namesOf(gold, pred);
  let valid = 0;
  const sampler = samplerFor(names, gold, pred);
  for (let i = 0; i < (sampler ? SAMPLE_COUNT : 1); i++) {
    o.deadline.check();
    const env = sampler ? sampler(i) : NO_SYMBOLS;
    const a = valueAt(gold, env, o);
    const b = valueAt(pred, env, o);
    if (a === null || b === null) {
      if (names.length === 0) return false;
      // defined on one side only (ln(x²) against 2 ln x at x < 0): not the same function
      if (a !== b) return false;
      continue;
    }
    if (isMat(a) || isMat(b)) {
      if (!isMat(a) || !isMat(b) || !matricesClose(a, b, gold, pred, o)) return false;
      valid++;
      continue;
    }
    if (names.length > 0) {
      const da = Number.isFinite(a.f);
      const db = Number.isFinite(b.f);
      if (da !== db) return false;
      if (!da || !decidable(a) || !decidable(b)) continue;
    }
    if (!numbersClose(a, b, o.floatRounding, gold, pred)) return false;
    valid++;
  }
  return names.length === 0 ? valid === 1 : valid >= 3;
}

/**
 * Two written matrices are equal when each cell equals its counterpart, each pair compared on its own:
 * a constant cell once, a cell with symbols at its own sample points (the whole matrix at every point
 * evaluated each constant cell twelve times; a 3×3 Jacobian was the slowest comparison of the bench).
 */
function cellsEqual(g: Node[][], p: Node[][], o: CompareOptions): boolean {
  if (g.length !== p.length) return false;
  for (let r = 0; r < g.length; r++) {
    const gr = g[r] as Node[];
    const pr = p[r] as Node[];
    if (gr.length !== pr.length) return false;
    for (let c = 0; c < gr.length; c++) if (!scalarEqual(gr[c] as Node, pr[c] as Node, o)) return false;
  }
  return true;
}

function matricesClose(
  a: { rows: Num[][] },
  b: { rows: Num[][] },
  gold: Node,
  pred: Node,
  o: CompareOptions,
): boolean {
  if (a.rows.length !== b.rows.length) return false;
  const cells = gold.k === 'matrix' && pred.k === 'matrix';
  for (let r = 0; r < a.rows.length; r++) {
    const ra = a.rows[r] ?? [];
    const rb = b.rows[r] ?? [];
    if (ra.length !== rb.length) return false;
    for (let c = 0; c < ra.length; c++) {
      const gn = cells ? gold.rows[r]?.[c] : undefined;
      const pn = cells ? pred.rows[r]?.[c] : undefined;
      if (!numbersClose(ra[c] as Num, rb[c] as Num, o.floatRounding, gn, pn)) return false;
    }
  }
  return true;
}
