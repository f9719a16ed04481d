import type { Deadline } from '../deadline.js';
import { LIMITS } from '../limits.js';
import { type Candidate, percentAfter } from './candidate.js';
import { flatten } from './flat.js';

interface Box {
  start: number;
  end: number;
  body: string;
}

/**
 * Every outermost `\boxed{...}` / `\fbox{...}` in one linear pass with a brace stack, so 100 KB of
 * braces or a thousand unterminated `\boxed{` cost O(n). Unterminated boxes are ignored.
 */
export function findBoxes(text: string, deadline: Deadline): Box[] {
  const open: { start: number; bodyStart: number; depth: number }[] = [];
  const boxes: Box[] = [];
  let depth = 0;
  flatten(text);
  for (let i = 0; i < text.length; i++) {
    if ((i & 1023) === 0) deadline.check();
    const c = text.charCodeAt(i);
    if (c !== 92 && c !== 123 && c !== 125) continue;
    if (c === 92 /* \ */) {
      const isBoxed = text.startsWith('boxed', i + 1);
      if (isBoxed || text.startsWith('fbox', i + 1)) {
        let j = i + (isBoxed ? 6 : 5);
        while (text.charCodeAt(j) === 32) j++;
        if (text.charCodeAt(j) === 123) {
          open.push({ start: i, bodyStart: j + 1, depth });
          depth++;
          i = j;
          continue;
        }
      }
      // skip \{ and \}: not grouping braces (but \\boxed is a doubled backslash before a command)
      if (text.charCodeAt(i + 1) !== 92) i++;
      continue;
    }
    if (c === 123 /* { */) {
      depth++;
      continue;
    }
    depth--;
    // (never index with -1: that is a slow named-property lookup in V8)
    const top = open.length > 0 ? open[open.length - 1] : undefined;
    if (top && top.depth === depth) {
      open.pop();
      if (open.length === 0) boxes.push({ start: top.start, end: i + 1, body: text.slice(top.bodyStart, i) });
    }
    if (depth < 0) {
      depth = 0;
      if (open.length > 0) open.length = 0;
    }
  }
  return boxes;
}

/** Text between two boxes that still reads as one answer list: punctuation, "and", "or". */
function joinable(gap: string): boolean {
  const g = gap
    .replace(/\\text\{([^{}]*)\}/g, '$1')
    .replace(/\\[()[\]]|\$|\\\\|\\q?quad|\\[,;:! ]/g, ' ')
    .trim();
  if (!/[A-Za-z0-9]/.test(g)) return true;
  return g.length <= 60 && /\b(?:and|or)\b/i.test(g);
}

/**
 * The last run of boxes that belong together ("\boxed{1}, \boxed{2} and \boxed{3}") as one
 * candidate; earlier lone boxes are older attempts and are not joined.
 */
export function boxedCandidates(text: string, deadline: Deadline): Candidate[] {
  const boxes = findBoxes(text, deadline);
  if (boxes.length === 0) return [];
  const out: Candidate[] = [];
  let i = boxes.length - 1;
  while (i >= 0) {
    let j = i;
    while (
      j > 0 &&
      i - j < LIMITS.maxJoined &&
      joinable(text.slice((boxes[j - 1] as Box).end, (boxes[j] as Box).start))
    )
      j--;
    let run = boxes.slice(j, i + 1);
    // the same answer boxed twice (`\boxed{5}\boxed{5}`) is that answer, not a list of two
    const first = (run[0] as Box).body.trim();
    if (run.length > 1 && run.every((b) => b.body.trim() === first)) run = run.slice(-1);
    const last = run[run.length - 1] as Box;
    const pct = percentAfter(text, last.end);
    const body = run.map((b) => `{${b.body}}`).join(' , ');
    out.push({
      text: run.length === 1 ? `${(run[0] as Box).body}${pct ? '\\%' : ''}` : body,
      ...(run.length > 1 ? { shown: run.map((b) => b.body.trim()).join(', ') } : {}),
      start: (run[0] as Box).start,
      end: last.end + pct,
      kind: 'boxed',
    });
    i = j - 1;
  }
  return out;
}

/** Count of final answers a response commits to: boxed runs and `<answer>` tags. */
export function countBoxes(text: string, deadline: Deadline): number {
  return findBoxes(text, deadline).length;
}
