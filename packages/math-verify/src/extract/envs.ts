import type { Deadline } from '../deadline.js';
import { type Candidate, percentAfter } from './candidate.js';
import { flatten } from './flat.js';

/**
 * Math environments in one left-to-right pass: `$$…$$` and `\[…\]` (may span lines), `$…$` and
 * `\(…\)` (one line, as Math-Verify: an inline formula broken over lines is not an answer). A
 * closing delimiter that does not exist is searched for once, so the scan stays linear.
 */
export function mathEnvs(text: string, deadline: Deadline): Candidate[] {
  const out: Candidate[] = [];
  let noDisplayDollar = false;
  let noBracket = false;
  let i = 0;
  const push = (start: number, bodyStart: number, bodyEnd: number, end: number) => {
    const pct = percentAfter(text, end);
    out.push({
      text: text.slice(bodyStart, bodyEnd) + (pct ? '\\%' : ''),
      start,
      end: end + pct,
      kind: 'latex',
    });
  };
  flatten(text);
  let steps = 0;
  while (i < text.length) {
    if ((++steps & 255) === 0) deadline.check();
    const c = text.charCodeAt(i);
    if (c !== 36 && c !== 92) {
      i++;
      continue;
    }
    if (out.length >= MAX_ENVS) out.shift();
    const prev = i > 0 ? text.charCodeAt(i - 1) : 0;
    if (c === 36 /* $ */ && prev !== 92) {
      if (text.charCodeAt(i + 1) === 36) {
        const close = noDisplayDollar ? -1 : text.indexOf('$$', i + 2);
        if (close < 0) {
          noDisplayDollar = true;
          i += 2;
          continue;
        }
        if (close > i + 2) push(i, i + 2, close, close + 2);
        i = close + 2;
        continue;
      }
      if (prev >= 48 && prev <= 57) {
        i++;
        continue;
      }
      let j = i + 1;
      while (j < text.length) {
        const d = text.charCodeAt(j);
        if (d === 10 || (d === 36 && text.charCodeAt(j - 1) !== 92)) break;
        j++;
      }
      if (j < text.length && text.charCodeAt(j) === 36 && j > i + 1) {
        push(i, i + 1, j, j + 1);
        i = j + 1;
      } else i = Math.max(j, i + 1);
      continue;
    }
    if (c === 92 && text.charCodeAt(i + 1) === 91 /* [ */) {
      const close = noBracket ? -1 : text.indexOf('\\]', i + 2);
      if (close < 0) {
        noBracket = true;
        i += 2;
        continue;
      }
      if (close > i + 2) push(i, i + 2, close, close + 2);
      i = close + 2;
      continue;
    }
    if (c === 92 && text.charCodeAt(i + 1) === 40 /* ( */) {
      let j = i + 2;
      while (j < text.length) {
        const d = text.charCodeAt(j);
        if (d === 10 || (d === 92 && text.charCodeAt(j + 1) === 41)) break;
        j++;
      }
      if (j < text.length && text.charCodeAt(j) === 92) {
        if (j > i + 2) push(i, i + 2, j, j + 2);
        i = j + 2;
      } else i = j;
      continue;
    }
    i += c === 92 ? 2 : 1;
  }
  return joinEnvs(text, out);
}

/** Only the last formulas matter; a flood of `$$$$` keeps this many. */
const MAX_ENVS = 400;

const CONNECTOR = /^\s*(?:,\s*and|,\s*or|and|or|,)\s*$/i;

/** "$1$, $2$ and $3$": consecutive formulas joined by commas/and/or form one answer list. */
function joinEnvs(text: string, envs: Candidate[]): Candidate[] {
  const out: Candidate[] = [];
  for (let i = 0; i < envs.length; i++) {
    const run = [envs[i] as Candidate];
    while (
      i + 1 < envs.length &&
      run.length < 6 &&
      CONNECTOR.test(text.slice((envs[i] as Candidate).end, (envs[i + 1] as Candidate).start))
    ) {
      run.push(envs[++i] as Candidate);
    }
    for (const c of run.slice(0, -1)) out.push(c);
    if (run.length > 1)
      out.push({
        text: run.map((c) => `{${c.text}}`).join(' , '),
        shown: run.map((c) => c.text.trim()).join(', '),
        start: (run[0] as Candidate).start,
        end: (run[run.length - 1] as Candidate).end,
        kind: 'latex',
      });
    else out.push(run[0] as Candidate);
  }
  return out;
}
