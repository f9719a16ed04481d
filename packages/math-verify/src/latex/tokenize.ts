import type { Deadline } from '../deadline.js';
import { LIMITS } from '../limits.js';
import { KNOWN_COMMANDS } from './vocabulary.js';

export type Token =
  | { k: 'num'; s: string }
  | { k: 'id'; s: string }
  | { k: 'cmd'; s: string }
  | { k: 'op'; s: string }
  | { k: 'text'; s: string }
  | { k: 'begin'; s: string }
  | { k: 'end'; s: string };

export class ParseFailure extends Error {
  override readonly name = 'ParseFailure';
}

/** Commands whose braced argument is prose (units, names, "and"): kept as one text token. */
const TEXT_COMMANDS = new Set([
  'text',
  'textbf',
  'textit',
  'textrm',
  'textnormal',
  'mbox',
  'textsf',
  'texttt',
  'hbox',
]);
/** Styling commands that wrap maths: dropped, their argument tokenised as usual. */
const TRANSPARENT = new Set([
  'mathrm',
  'mathbf',
  'mathit',
  'mathsf',
  'mathbb',
  'mathcal',
  'boldsymbol',
  'bm',
  'displaystyle',
  'textstyle',
  'left',
  'right',
  'bigl',
  'bigr',
  'Bigl',
  'Bigr',
  'big',
  'Big',
  'bigg',
  'Bigg',
  'biggl',
  'biggr',
  'boxed',
  'fbox',
  'overline',
  'underline',
  'vec',
  'hat',
  'bar',
  'tilde',
  'overrightarrow',
  'limits',
  'nolimits',
]);
/** Spacing commands: nothing. */
const SPACES = new Set([
  'quad',
  'qquad',
  'enspace',
  'thinspace',
  'medspace',
  'thickspace',
  'hfill',
  'nonumber',
]);
/** Commands that can be glued to a following letter in sloppy output (`\quadx`, `\cdotx`). */
const GLUABLE = ['qquad', 'quad', 'cdot', 'times', 'pm', 'mp', 'div', 'pi', 'infty', 'in', 'le', 'ge', 'neq'];

function readBraced(src: string, open: number): { body: string; next: number } | null {
  if (src[open] !== '{') return null;
  let depth = 0;
  for (let i = open; i < src.length; i++) {
    const c = src[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (c === '{') depth++;
    else if (c === '}') {
      depth--;
      if (depth === 0) return { body: src.slice(open + 1, i), next: i + 1 };
    }
  }
  return null;
}

// Character classes by code: a regex test per character was a tenth of a matrix answer's verify call.
/** What `/\s/` matches: ASCII spaces by code, the rest (rare) by the regex itself. */
const isSpace = (s: string, i: number): boolean => {
  const c = s.charCodeAt(i);
  return c === 32 || (c >= 9 && c <= 13) || (c >= 0x80 && /\s/.test(s[i] as string));
};
const isDigit = (s: string, i: number): boolean => {
  const c = s.charCodeAt(i); // NaN past the end: false
  return c >= 48 && c <= 57;
};
const isLetter = (s: string, i: number): boolean => {
  const c = s.charCodeAt(i) | 32; // ASCII letters fold to lower case
  return c >= 97 && c <= 122;
};

function pushTo(out: Token[], t: Token): void {
  if (out.length >= LIMITS.maxTokens) throw new ParseFailure('too many tokens');
  out.push(t);
}

function knownCommand(n: string): boolean {
  return (
    TEXT_COMMANDS.has(n) ||
    TRANSPARENT.has(n) ||
    SPACES.has(n) ||
    n === 'begin' ||
    n === 'end' ||
    KNOWN_COMMANDS.has(n)
  );
}

function skipSpaces(src: string, i: number): number {
  while (i < src.length && isSpace(src, i)) i++;
  return i;
}

/** Splits normalised LaTeX into tokens; bounded by `LIMITS.maxTokens`. */
export function tokenize(src: string, deadline: Deadline): Token[] {
  const out: Token[] = [];
  let i = 0;
  const push = pushTo.bind(null, out); // bound, not a local arrow (tsx names each of those per call)
  while (i < src.length) {
    deadline.check();
    const c = src[i] as string;
    if (isSpace(src, i)) {
      i++;
      continue;
    }
    if (isDigit(src, i) || (c === '.' && isDigit(src, i + 1))) {
      let j = i;
      while (isDigit(src, j)) j++;
      if (src[j] === '.' && isDigit(src, j + 1)) {
        j++;
        while (isDigit(src, j)) j++;
      }
      push({ k: 'num', s: src.slice(i, j) });
      i = j;
      continue;
    }
    if (isLetter(src, i)) {
      push({ k: 'id', s: c });
      i++;
      continue;
    }
    if (c === '\\') {
      const m = /^[A-Za-z]+/.exec(src.slice(i + 1, i + 40));
      if (!m) {
        const nx = src[i + 1] ?? '';
        i += 2;
        if (nx === '\\') push({ k: 'op', s: '\\\\' });
        else if (nx === '{' || nx === '}') push({ k: 'op', s: `\\${nx}` });
        else if (nx === '%') push({ k: 'op', s: '%' });
        else if (nx === '|') push({ k: 'op', s: '|' });
        // \, \! \; \: \  \$ are spacing or currency: nothing.
        continue;
      }
      let name = m[0];
      if (!knownCommand(name)) {
        const glued = GLUABLE.find((g) => name.startsWith(g) && name.length > g.length);
        if (glued) name = glued;
      }
      i += 1 + name.length;
      if (TEXT_COMMANDS.has(name)) {
        const b = readBraced(src, skipSpaces(src, i));
        if (!b) throw new ParseFailure(`\\${name} without a braced argument`);
        push({ k: 'text', s: b.body });
        i = b.next;
      } else if (name === 'operatorname') {
        const b = readBraced(src, skipSpaces(src, i));
        if (!b) throw new ParseFailure('\\operatorname without argument');
        push({ k: 'cmd', s: b.body.replace(/[\s*]/g, '') });
        i = b.next;
      } else if (name === 'begin' || name === 'end') {
        const b = readBraced(src, skipSpaces(src, i));
        if (!b) throw new ParseFailure(`\\${name} without environment name`);
        i = b.next;
        const env = b.body.replace(/\*$/, '');
        if (name === 'begin' && env === 'array') {
          const spec = readBraced(src, skipSpaces(src, i));
          if (spec) i = spec.next;
        }
        push({ k: name, s: env });
      } else if (TRANSPARENT.has(name) || SPACES.has(name)) {
        // nothing: the argument (if any) is tokenised as ordinary maths
      } else {
        push({ k: 'cmd', s: name });
      }
      continue;
    }
    const uni = UNICODE[c];
    if (uni) {
      push(uni);
      i++;
      continue;
    }
    if (c === '<' && src[i + 1] === '=') {
      push({ k: 'cmd', s: 'le' });
      i += 2;
      continue;
    }
    if (c === '>' && src[i + 1] === '=') {
      push({ k: 'cmd', s: 'ge' });
      i += 2;
      continue;
    }
    if (c === '!' && src[i + 1] === '=') {
      push({ k: 'cmd', s: 'neq' });
      i += 2;
      continue;
    }
    if ("+-*/^_()[]{}|,;=<>!&':%".includes(c)) {
      push({ k: 'op', s: c });
      i++;
      continue;
    }
    // '$', '?', quotes and other stray characters carry no maths.
    if (c === '$' || c === '"' || c === '`' || c === '.' || c === '?') {
      i++;
      continue;
    }
    throw new ParseFailure(`unexpected character ${JSON.stringify(c)}`);
  }
  return out;
}

const UNICODE: Record<string, Token> = {
  '×': { k: 'cmd', s: 'times' },
  '·': { k: 'cmd', s: 'cdot' },
  '÷': { k: 'cmd', s: 'div' },
  '≤': { k: 'cmd', s: 'le' },
  '≥': { k: 'cmd', s: 'ge' },
  '≠': { k: 'cmd', s: 'neq' },
  '±': { k: 'cmd', s: 'pm' },
  '∓': { k: 'cmd', s: 'mp' },
  π: { k: 'cmd', s: 'pi' },
  '∞': { k: 'cmd', s: 'infty' },
  '√': { k: 'cmd', s: 'sqrt' },
  '−': { k: 'op', s: '-' },
  '≈': { k: 'cmd', s: 'approx' },
  '∪': { k: 'cmd', s: 'cup' },
  '∈': { k: 'cmd', s: 'in' },
};
