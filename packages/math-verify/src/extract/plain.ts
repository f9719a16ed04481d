import type { Deadline } from '../deadline.js';
import { type Candidate, percentAfter } from './candidate.js';

/**
 * Numbers and simple expressions in prose ("is 1,000.99€", "P(A) = 2/3.", "is √2"): runs of
 * digits, operators and `√` that start after a space, "=", a currency sign, the start of the
 * text, markdown emphasis opened there (`**7**`, `` `7` ``, as Math-Verify's `(?:\*\*)?` prefix)
 * or a CJK character or full-width punctuation (CJK text puts no space around numbers: 答案是7。),
 * so "AZYUK2A" holds no answer. One global regex without nested ambiguity: linear.
 */
const CJK =
  '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}\\u3000-\\u303f\\uff01-\\uff0f\\uff1a-\\uff20';
const OPEN = `[\\s=$€£¥₹:(${CJK}]`;
const BEFORE = `(?<=^|${OPEN}|(?:^|${OPEN})(?:\\*\\*?|\`|__))`;
// `\!` (LaTeX negative space) and `{,}` join thousands in `\$10,\!000` and `\$18{,}000`
const CHARS = '(?:[\\d.,()+\\-*/^×÷√]|\\\\!|\\{,\\})';
const RUN = new RegExp(`${BEFORE}-?\\(?-?(?:\\.?\\d|√)${CHARS}*(?: [\\d(+\\-*/^×÷√]${CHARS}*)*`, 'gu');

const THOUSANDS = /^(-?)([1-9]\d{0,2})((?:([ ,])\d{3})(?:\4\d{3})*)(\.\d+)?$/;
const DECIMAL_COMMA = /^(-?\d+),(\d+)$/;
const PLAIN = /^-?(?:\d+(?:\.\d+)?|\.\d+)$/;

/** A canonical number for the plain forms, or null when the run is an expression. */
export function plainNumber(run: string): string | null {
  if (isDigits(run)) return run;
  const t = THOUSANDS.exec(run);
  if (t) return `${t[1]}${t[2]}${(t[3] ?? '').replace(/[ ,]/g, '')}${t[5] ?? ''}`;
  const d = DECIMAL_COMMA.exec(run);
  if (d) return `${d[1]}.${d[2]}`;
  if (PLAIN.test(run)) return run;
  return null;
}

function isDigits(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

function trimRun(run: string): string {
  if (isDigits(run)) return run; // the common case, without regex work
  // the lookbehinds keep these linear on long runs of dots or operators
  let s = run.replace(/(?<![\s.,])[\s.,]+$/, '').replace(/(?<![+\-*/^×÷(\s])[+\-*/^×÷(\s]+$/, '');
  // drop unbalanced parentheses at the ends
  while (s.endsWith(')') && count(s, ')') > count(s, '('))
    s = s.slice(0, -1).replace(/(?<![\s.,])[\s.,]+$/, '');
  while (s.startsWith('(') && count(s, '(') > count(s, ')')) s = s.slice(1);
  return s;
}

export function plainCandidates(
  text: string,
  deadline: Deadline,
  skip: { start: number; end: number }[],
  windows: { start: number; end: number }[] = [{ start: 0, end: text.length }],
): Candidate[] {
  const out: Candidate[] = [];
  let k = 0;
  const re = new RegExp(RUN.source, 'gu');
  const matches: RegExpExecArray[] = [];
  for (const w of windows) {
    // the lookbehind still sees the character before lastIndex, so a window starts cleanly
    re.lastIndex = w.start;
    for (let m = re.exec(text); m !== null && m.index < w.end; m = re.exec(text)) {
      deadline.check();
      matches.push(m);
    }
  }
  for (const m of matches) {
    const start = m.index;
    while (k < skip.length && (skip[k] as { end: number }).end <= start) k++;
    const s = skip[k];
    if (s && s.start <= start && start < s.end) continue;
    const trimmed = trimRun(m[0]);
    if (!/\d/.test(trimmed)) continue;
    const lead = m[0].indexOf(trimmed);
    const end = start + lead + trimmed.length;
    const raw = /\\!|\{,\}/.test(trimmed) ? trimmed.replace(/\\!/g, '').replace(/\{,\}/g, ',') : trimmed;
    const pct = percentAfter(text, end);
    const n = plainNumber(raw);
    if (n !== null) {
      out.push({ text: n + (pct ? '%' : ''), start, end: end + pct, kind: 'plain', plainNumber: n });
      continue;
    }
    if (/\d\s*[+\-*/^×÷]\s*[\d(.-]|\)\s*[+\-*/^×÷]|√\s*[\d(]/.test(raw)) {
      out.push({
        text: raw.replace(/×/g, '\\times ').replace(/÷/g, '\\div ') + (pct ? '%' : ''),
        start,
        end: end + pct,
        kind: 'plain',
      });
      continue;
    }
    // "8, 30, 45": the last number of the run
    const last = /(?<![\d.])(-?\d+(?:\.\d+)?)$/.exec(raw);
    if (last)
      out.push({ text: last[1] as string, start: end - (last[1] as string).length, end, kind: 'plain' });
  }
  return out;
}

const BARE_FRACTION = /-?\\[dt]?frac\{-?\d+(?:[.,]\d+)?\}\{-?\d+(?:[.,]\d+)?\}/g;

/** `\frac{10}{9}` written outside any math delimiters (Math-Verify's latexFraction pattern). */
export function bareFractions(text: string, skip: { start: number; end: number }[]): Candidate[] {
  const out: Candidate[] = [];
  for (const m of text.matchAll(BARE_FRACTION)) {
    const start = m.index ?? 0;
    if (skip.some((s) => s.start <= start && start < s.end)) continue;
    out.push({ text: m[0], start, end: start + m[0].length, kind: 'latex' });
  }
  return out;
}

function count(s: string, ch: string): number {
  return s.split(ch).length - 1;
}
