import type { Deadline } from './deadline.js';
import type { Candidate } from './extract/candidate.js';
import { candidateTiers } from './extract/extract.js';
import { plainNumber } from './extract/plain.js';
import type { Node } from './latex/ast.js';
import { normalizeAnswer } from './latex/normalize.js';
import { parseLatex } from './latex/parse.js';
import { ParseFailure } from './latex/tokenize.js';
import { LIMITS } from './limits.js';

/** An extracted answer: its text, and its parse when we could read it. */
export interface Answer {
  raw: string;
  node: Node | null;
  /** The answer as reported back (joined boxes as `1, 2`); `raw` when absent. */
  shown?: string;
  /** A second reading of an ambiguous gold (`-2,1`: the decimal −2.1, or the list −2 and 1). */
  alternative?: Node;
  /** normalizeAnswer(raw), kept when parsing computed it (the string comparison needs it again). */
  normal?: string;
}

/** Parses one candidate; `seen.normal` receives its normalised text when that was computed. */
export function parseCandidate(
  text: string,
  deadline: Deadline,
  plain?: string,
  seen?: { normal?: string },
): Node | null {
  // never normalise (or parse) an unbounded string: the cap is what keeps every regex cheap
  if (text.length > LIMITS.maxAnswerChars) return null;
  try {
    if (plain !== undefined) {
      const node = parseLatex(plain, deadline);
      return text.endsWith('%') ? { k: 'pct', x: node } : node;
    }
    const normal = normalizeAnswer(text);
    if (seen) seen.normal = normal;
    try {
      return parseLatex(normal, deadline);
    } catch (e) {
      // `\sum_{k=1}^{10} k = 55`: a left side we cannot read; Math-Verify takes the right-hand side
      // of an equation answer (grader.py: `take_last_relation(pred).rhs`; parser.py `get_last_eq`)
      const rhs = e instanceof ParseFailure ? lastEquationSide(normal) : null;
      if (rhs === null) throw e;
      return parseLatex(rhs, deadline);
    }
  } catch (e) {
    if (e instanceof ParseFailure || e instanceof RangeError) return null;
    throw e;
  }
}

/** What follows the last `=` of an equation chain (not `\=`, `<=`, `>=`, `!=`); null for `a=1, b=2`. */
function lastEquationSide(input: string): string | null {
  const latex = input.replace(/\\[,;:! ]/g, ' '); // spacing commands are not separators
  if (latex.includes(',') || latex.includes(';')) return null;
  const parts = latex.split(/(?<![\\<>!])=/);
  const last = parts.length >= 2 ? (parts[parts.length - 1] as string).trim() : '';
  return last.length > 0 ? last : null;
}

/**
 * The first candidate, by priority, that parses. A formula that failed to parse also blocks the
 * numbers inside it (no "2" out of a broken "\frac{2}{"), as in Math-Verify. When nothing parses,
 * the first candidate comes back unparsed for string comparison.
 */
export function extractFrom(text: string, deadline: Deadline): Answer | null {
  const tiers = candidateTiers(text, deadline);
  let fallback: Candidate | null = null;
  const failed: Candidate[] = [];
  let tried = 0;
  for (const tier of tiers) {
    for (const c of tier) {
      deadline.check();
      if (++tried > LIMITS.maxCandidates) return fallback ? { raw: fallback.text, node: null } : null;
      if (c.kind === 'plain' && failed.some((f) => c.start < f.end && c.end > f.start)) continue;
      fallback ??= c;
      const seen: { normal?: string } = {};
      const node = parseCandidate(c.text, deadline, c.plainNumber, seen);
      if (node) return { raw: c.text, node, ...(c.shown && { shown: c.shown }), ...seen };
      if (c.kind === 'latex' || c.kind === 'boxed') failed.push(c);
    }
  }
  return fallback ? { raw: fallback.text, node: null } : null;
}

const HAS_MARKUP = /\$|\\boxed|\\fbox|\\\[|\\\(|<answer>/;

/**
 * The gold answer: a bare answer read as is, else extracted. A bare `1,22` is the decimal 1.22 (as
 * Math-Verify reads it) and also the list 1, 22 (as maths datasets write roots): either matches.
 */
export function goldAnswer(gold: string, deadline: Deadline, bare: boolean): Answer | null {
  const g = gold.trim();
  if (bare && !HAS_MARKUP.test(g) && g.length > 0) {
    const n = plainNumber(g.replace(/%$/, ''));
    if (n !== null) {
      const node = parseCandidate(g, deadline, n);
      const list = /^-?\d+,\d+$/.test(g) ? parseCandidate(g, deadline) : null;
      return list ? { raw: g, node, alternative: list } : { raw: g, node };
    }
    const seen: { normal?: string } = {};
    const node = parseCandidate(g, deadline, undefined, seen);
    if (node) return { raw: g, node, ...seen };
  }
  return extractFrom(gold, deadline);
}
