import type { Deadline } from '../deadline.js';
import { type Candidate, percentAfter } from './candidate.js';

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
  while (i < text.length) {
    if ((i & 255) === 0) deadline.check();
    const c = text[i];
    const prev = i > 0 ? text[i - 1] : '';
    if (c === '$' && prev !== '\\') {
      if (text[i + 1] === '$') {
        const close = noDisplayDollar ? -1 : text.indexOf('$$', i + 2);
        if (close < 0) {
          noDisplayDollar = true;
          i += 2;
          continue;
        }
        push(i, i + 2, close, close + 2);
        i = close + 2;
        continue;
      }
      if (/\d/.test(prev ?? '')) {
        i++;
        continue;
      }
      let j = i + 1;
      while (j < text.length && text[j] !== '\n' && !(text[j] === '$' && text[j - 1] !== '\\')) j++;
      if (j < text.length && text[j] === '$' && j > i + 1) {
        push(i, i + 1, j, j + 1);
        i = j + 1;
      } else i = Math.max(j, i + 1);
      continue;
    }
    if (c === '\\' && text[i + 1] === '[') {
      const close = noBracket ? -1 : text.indexOf('\\]', i + 2);
      if (close < 0) {
        noBracket = true;
        i += 2;
        continue;
      }
      push(i, i + 2, close, close + 2);
      i = close + 2;
      continue;
    }
    if (c === '\\' && text[i + 1] === '(') {
      let j = i + 2;
      while (j < text.length && text[j] !== '\n' && !(text[j] === '\\' && text[j + 1] === ')')) j++;
      if (j < text.length && text[j] === '\\') {
        push(i, i + 2, j, j + 2);
        i = j + 2;
      } else i = j;
      continue;
    }
    if (c === '\\') {
      i += 2;
      continue;
    }
    i++;
  }
  return joinEnvs(text, out);
}

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
        start: (run[0] as Candidate).start,
        end: (run[run.length - 1] as Candidate).end,
        kind: 'latex',
      });
    else out.push(run[0] as Candidate);
  }
  return out;
}
