import type { Deadline } from '../deadline.js';
import { LIMITS } from '../limits.js';
import { boxedCandidates } from './boxed.js';
import type { Candidate } from './candidate.js';
import { mathEnvs } from './envs.js';
import { bareFractions, plainCandidates } from './plain.js';

/**
 * Candidate answers grouped by priority, best group first and rightmost first inside a group
 * (after Math-Verify's extraction order, with `\boxed` at the top as in its tests):
 *   0   the last run of \boxed{}, an <answer> tag, "final answer is X. I hope"
 *   50  "final answer ... is X"
 *   100 "answer: X"     200 "answer ... X"
 *   300 any formula or number, rightmost first
 * The caller parses candidates in this order and keeps the first that parses.
 */
export function candidateTiers(response: string, deadline: Deadline): Candidate[][] {
  const text = response.length > LIMITS.maxScanChars ? response.slice(-LIMITS.maxScanChars) : response;
  const boxed = boxedCandidates(text, deadline);
  const envs = mathEnvs(text, deadline);
  const skip = [...envs, ...boxed].sort((a, b) => a.start - b.start);
  const spans = mergeSpans(skip);
  const fractions = bareFractions(text, spans);
  const plain = plainCandidates(
    text,
    deadline,
    mergeSpans([...skip, ...fractions].sort((a, b) => a.start - b.start)),
    plainWindows(text),
  );
  const all = [...envs, ...fractions, ...plain].sort((a, b) => a.start - b.start || b.end - a.end);

  const tier0: Candidate[] = [];
  const lastBox = boxed[0] ?? (text === response ? undefined : boxBeforeTail(response, deadline));
  if (lastBox) tier0.push(lastBox);
  for (const tag of answerTags(text)) {
    const inner = tag.inner.trim();
    if (inner && inner.length <= LIMITS.maxAnswerChars && !/\\(?:boxed|fbox)\s*\{/.test(inner))
      tier0.push({ text: inner.replace(/^\$+|\$+$/g, ''), start: tag.start, end: tag.end, kind: 'tag' });
  }
  tier0.push(...anchored(text, all, /final answer is\s*:?\s*/gi, 0, deadline, /^\s?\.?\s?I hope/i));
  const tier50 = anchored(text, all, /final answer[\s\S]{0,100}?\s+is\s*:?\s*/gi, 0, deadline);
  const tier100 = anchored(text, all, /answer\s*:/gi, 50, deadline);
  const tier200 = anchored(text, all, /answer/gi, 50, deadline);
  return [tier0, tier50, tier100, tier200, [...all]].map((t) => t.sort(byEnd)).filter((t) => t.length > 0);
}

function byEnd(a: Candidate, b: Candidate): number {
  return b.end - a.end || a.start - b.start;
}

/**
 * The last `\boxed{}` of a response whose scanned tail holds none: a boxed answer followed by
 * more than `maxScanChars` of text still wins (Math-Verify's boxed pattern sees the whole text).
 * Found with lastIndexOf and read from a window of `maxScanChars` after it, so the cost stays
 * one more bounded scan; it sorts before everything of the tail (negative offsets).
 */
function boxBeforeTail(response: string, deadline: Deadline): Candidate | undefined {
  const tailStart = response.length - LIMITS.maxScanChars;
  const at = Math.max(response.lastIndexOf('\\boxed', tailStart), response.lastIndexOf('\\fbox', tailStart));
  if (at < 0) return undefined;
  const from = Math.max(0, at - LIMITS.maxAnswerChars);
  const window = response.slice(from, Math.min(response.length, at + LIMITS.maxScanChars));
  const box = boxedCandidates(window, deadline).find((b) => b.end > at - from);
  if (!box) return undefined;
  return { ...box, start: box.start - window.length - 1, end: box.end - window.length - 1 };
}

function mergeSpans(spans: Candidate[]): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  for (const s of spans) {
    const last = out.length > 0 ? out[out.length - 1] : undefined;
    if (last && s.start < last.end) last.end = Math.max(last.end, s.end);
    else out.push({ start: s.start, end: s.end });
  }
  return out;
}

/**
 * For each anchor match, the first candidate that starts within `window` characters after it
 * (0: right after it) and, when `after` is given, is followed by that text.
 */
function anchored(
  text: string,
  all: Candidate[],
  anchor: RegExp,
  window: number,
  deadline: Deadline,
  after?: RegExp,
): Candidate[] {
  const out: Candidate[] = [];
  for (const m of text.matchAll(anchor)) {
    deadline.check();
    const from = (m.index ?? 0) + m[0].length;
    const c = firstStartingIn(all, from, from + window);
    if (!c) continue;
    if (after && !after.test(text.slice(c.end, c.end + 12))) continue;
    if (/^\s*=/.test(text.slice(c.end, c.end + 4))) continue;
    out.push(c);
  }
  return out;
}

/** Binary search in candidates sorted by start: the first one starting in [lo, hi]. */
function firstStartingIn(all: Candidate[], lo: number, hi: number): Candidate | undefined {
  let a = 0;
  let b = all.length;
  while (a < b) {
    const mid = (a + b) >> 1;
    if ((all[mid] as Candidate).start < lo) a = mid + 1;
    else b = mid;
  }
  const c = all[a];
  if (!c || c.start > hi) return undefined;
  // prefer the longest candidate starting there (a joined list over its first formula)
  let best = c;
  for (let k = a + 1; k < all.length && (all[k] as Candidate).start === c.start; k++)
    if ((all[k] as Candidate).end > best.end) best = all[k] as Candidate;
  return best;
}

/** `<answer>…</answer>` spans, found with indexOf so a flood of open tags stays linear. */
export function answerTags(text: string): { inner: string; start: number; end: number }[] {
  const out: { inner: string; start: number; end: number }[] = [];
  const lower = text.toLowerCase();
  let from = 0;
  for (;;) {
    const open = lower.indexOf('<answer>', from);
    if (open < 0) break;
    const close = lower.indexOf('</answer>', open + 8);
    if (close < 0) break;
    // the last opening tag before the close owns it
    const inner = lower.lastIndexOf('<answer>', close);
    out.push({ inner: text.slice(inner + 8, close), start: inner, end: close + 9 });
    from = close + 9;
  }
  return out;
}

/** Prose numbers are read near the end (tier 300 wants the rightmost) and after each "answer". */
export const PLAIN_TAIL_CHARS = 4_000;

function plainWindows(text: string): { start: number; end: number }[] {
  const wins: { start: number; end: number }[] = [];
  for (const m of text.matchAll(/answer/gi)) {
    const from = (m.index ?? 0) + 6;
    wins.push({ start: from, end: Math.min(text.length, from + 180) });
  }
  wins.push({ start: Math.max(0, text.length - PLAIN_TAIL_CHARS), end: text.length });
  wins.sort((a, b) => a.start - b.start);
  const merged: { start: number; end: number }[] = [];
  for (const w of wins) {
    const last = merged.length > 0 ? merged[merged.length - 1] : undefined;
    if (last && w.start <= last.end) last.end = Math.max(last.end, w.end);
    else merged.push({ ...w });
  }
  return merged;
}
