import type { SchemaNode } from './json-schema-node.js';

// The grammar of json-prefix.ts: RFC 8259's JSON read one character at a time as a stack of open
// constructs, each value held to its compiled schema node. `step` gives every state a stack can be
// in after one more character (several where anyOf branches share a prefix, none when the
// character cannot come next); states are immutable, so a checker clones for free.

type NumberState = 'minus' | 'zero' | 'int' | 'dot' | 'frac' | 'exp' | 'expSign' | 'expDigits';

/** One open construct of the text read so far; a parse state is the stack of them. */
export type Frame =
  | { k: 'value'; alts: readonly SchemaNode[] }
  | {
      k: 'object';
      node: SchemaNode;
      /** keys written so far (a key is never written twice) */
      used: readonly string[];
      m: 'key-or-close' | 'key' | 'colon' | 'member' | 'after';
      key: string;
    }
  | { k: 'array'; node: SchemaNode; m: 'value-or-close' | 'member' | 'after' }
  | { k: 'string'; isKey: boolean; text: string; esc: '' | '\\' | 'u'; hex: string }
  | { k: 'number'; m: NumberState; integer: boolean; digits: number }
  | { k: 'literal'; texts: readonly string[]; typed: string };
export type Stack = readonly Frame[];

export const WS = new Set([' ', '\t', '\n', '\r']);
/** What each JSON escape letter stands for (RFC 8259 §7). */
export const ESCAPES: Record<string, string> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};
const HEX = /^[0-9a-fA-F]$/;
const isDigit = (ch: string) => ch >= '0' && ch <= '9';
export const NUMBER_ENDS = new Set<NumberState>(['zero', 'int', 'frac', 'expDigits']);
/**
 * The most digits a number part may have: an integer 16 (2^53 has 16 digits: past it a float64
 * client cannot hold the value), a number's integer part 21 and fraction 24 (the most JavaScript's
 * and Python's shortest round-trip spelling writes), an exponent 3. A bound, not a schema keyword:
 * without it a small model can spend its whole budget on the digits of one number.
 */
const MAX_DIGITS = { integer: 16, int: 21, frac: 24, expDigits: 3 };

/** Whether a separator was just read: a value or a key comes next. */
export function awaitsMember(s: Stack): boolean {
  const top = s.at(-1);
  return top?.k === 'value' || (top?.k === 'object' && top.m === 'key');
}

export function inText(s: Stack): boolean {
  const top = s.at(-1);
  return top?.k === 'string' || top?.k === 'literal';
}

export function canEnd(f: Frame): boolean {
  if (f.k === 'number') return NUMBER_ENDS.has(f.m);
  return f.k === 'literal' && f.texts.includes(f.typed);
}

/** Every state `stack` can be in after `ch` (none: `ch` cannot come next). */
export function step(stack: Stack, ch: string): Stack[] {
  const top = stack.at(-1);
  if (!top) return [];
  const rest = stack.slice(0, -1);
  switch (top.k) {
    case 'value':
      return WS.has(ch) ? [stack] : startValue(rest, top.alts, ch);
    case 'string':
      return stringStep(rest, top, ch);
    case 'number':
      return numberStep(rest, top, ch);
    case 'literal': {
      const typed = top.typed + ch;
      const texts = top.texts.filter((t) => t.startsWith(typed));
      const out: Stack[] = texts.length > 0 ? [[...rest, { ...top, texts, typed }]] : [];
      return top.texts.includes(top.typed) ? [...out, ...step(complete(rest), ch)] : out;
    }
    case 'object':
      return objectStep(rest, top, ch);
    case 'array':
      return arrayStep(rest, top, ch);
  }
}

/** The first character of a value of one of `alts`: one state per alternative it can start. */
function startValue(rest: Stack, alts: readonly SchemaNode[], ch: string): Stack[] {
  const out: Stack[] = [];
  for (const node of alts) {
    const t = node.types;
    let frame: Frame | null = null;
    if (node.literals) {
      const texts = node.literals.filter((s) => s.startsWith(ch));
      if (texts.length > 0) frame = { k: 'literal', texts, typed: ch };
    } else if (ch === '{' && t.has('object'))
      frame = { k: 'object', node, used: [], m: 'key-or-close', key: '' };
    else if (ch === '[' && t.has('array')) frame = { k: 'array', node, m: 'value-or-close' };
    else if (ch === '"' && t.has('string')) frame = { k: 'string', isKey: false, text: '', esc: '', hex: '' };
    else if ((ch === '-' || isDigit(ch)) && (t.has('number') || t.has('integer')))
      frame = {
        k: 'number',
        m: ch === '-' ? 'minus' : ch === '0' ? 'zero' : 'int',
        integer: !t.has('number'),
        digits: ch === '-' ? 0 : 1,
      };
    else if ((ch === 't' || ch === 'f') && t.has('boolean'))
      frame = { k: 'literal', texts: [ch === 't' ? 'true' : 'false'], typed: ch };
    else if (ch === 'n' && t.has('null')) frame = { k: 'literal', texts: ['null'], typed: ch };
    if (frame) out.push([...rest, frame]);
  }
  return out;
}

/** The value on top finished: its parent moves past it (an empty stack: the whole value is done). */
export function complete(rest: Stack): Stack {
  const parent = rest.at(-1);
  if (!parent) return rest;
  const up = rest.slice(0, -1);
  if (parent.k === 'object') return [...up, { ...parent, m: 'after', used: [...parent.used, parent.key] }];
  if (parent.k === 'array') return [...up, { ...parent, m: 'after' }];
  return rest;
}

function stringStep(rest: Stack, f: Extract<Frame, { k: 'string' }>, ch: string): Stack[] {
  let next: typeof f;
  if (f.esc === 'u') {
    if (!HEX.test(ch)) return [];
    const hex = f.hex + ch;
    next =
      hex.length < 4
        ? { ...f, hex }
        : {
            ...f,
            esc: '',
            hex: '',
            text: f.isKey ? f.text + String.fromCharCode(Number.parseInt(hex, 16)) : '',
          };
  } else if (f.esc === '\\') {
    if (ch === 'u') next = { ...f, esc: 'u', hex: '' };
    else if (ch in ESCAPES) next = { ...f, esc: '', text: f.isKey ? f.text + ESCAPES[ch] : '' };
    else return [];
  } else if (ch === '\\') next = { ...f, esc: '\\' };
  else if (ch === '"') return f.isKey ? closeKey(rest, f.text) : [complete(rest)];
  else if (ch < ' ') return [];
  else next = { ...f, text: f.isKey ? f.text + ch : '' };
  // A key's text must stay the start of a key the object takes (an escape: of a longer one).
  if (f.isKey && next.esc === '' && !keyMayStart(rest.at(-1) as ObjectFrame, next.text)) return [];
  if (f.isKey && next.esc !== '' && !keyEscapeMay(rest.at(-1) as ObjectFrame, next.text, next.hex)) return [];
  return [[...rest, next]];
}

export type ObjectFrame = Extract<Frame, { k: 'object' }>;

/** Keys the object may still take by name (additionalProperties false), or null for any new key. */
export function namedKeys(f: ObjectFrame): string[] | null {
  if (f.node.additional !== null) return null;
  return [...f.node.properties.keys()].filter((k) => !f.used.includes(k));
}

/** Whether a `\\u` escape begun with `hex` can still write the next character of a key the object takes. */
function keyEscapeMay(f: ObjectFrame, text: string, hex: string): boolean {
  const names = namedKeys(f);
  const h = hex.toLowerCase();
  return (
    names === null ||
    names.some(
      (k) =>
        k.startsWith(text) &&
        k.length > text.length &&
        k.charCodeAt(text.length).toString(16).padStart(4, '0').startsWith(h),
    )
  );
}

function keyMayStart(f: ObjectFrame, text: string): boolean {
  const names = namedKeys(f);
  return names === null || names.some((k) => k.startsWith(text));
}

function closeKey(rest: Stack, key: string): Stack[] {
  const parent = rest.at(-1) as ObjectFrame;
  if (parent.used.includes(key)) return [];
  const names = namedKeys(parent);
  if (names !== null && !names.includes(key)) return [];
  return [[...rest.slice(0, -1), { ...parent, m: 'colon', key }]];
}

const requiredMet = (f: ObjectFrame) => f.node.required.every((r) => f.used.includes(r));

function objectStep(rest: Stack, f: ObjectFrame, ch: string): Stack[] {
  if (WS.has(ch)) return [[...rest, f]];
  const key = (): Stack[] => [[...rest, f, { k: 'string', isKey: true, text: '', esc: '', hex: '' }]];
  switch (f.m) {
    case 'key-or-close':
      if (ch === '}') return requiredMet(f) ? [complete(rest)] : [];
      return ch === '"' && moreKeys(f) ? key() : [];
    case 'key':
      return ch === '"' ? key() : [];
    case 'colon': {
      if (ch !== ':') return [];
      const alts = f.node.properties.get(f.key) ?? f.node.additional ?? [];
      return [[...rest, { ...f, m: 'member' }, { k: 'value', alts }]];
    }
    case 'after':
      if (ch === '}') return requiredMet(f) ? [complete(rest)] : [];
      return ch === ',' && moreKeys(f) ? [[...rest, { ...f, m: 'key' }]] : [];
    default:
      return [];
  }
}

/** Whether another key can be written: any new key allowed, or a named one not yet written. */
function moreKeys(f: ObjectFrame): boolean {
  const names = namedKeys(f);
  return names === null || names.length > 0;
}

function arrayStep(rest: Stack, f: Extract<Frame, { k: 'array' }>, ch: string): Stack[] {
  if (WS.has(ch) && f.m !== 'member') return [[...rest, f]];
  const item = (): Stack => [...rest, { ...f, m: 'member' }, { k: 'value', alts: f.node.items }];
  if (f.m === 'value-or-close') return ch === ']' ? [complete(rest)] : step(item(), ch);
  if (f.m === 'after') {
    if (ch === ']') return [complete(rest)];
    return ch === ',' ? [item()] : [];
  }
  return [];
}

function numberStep(rest: Stack, f: Extract<Frame, { k: 'number' }>, ch: string): Stack[] {
  const digit = isDigit(ch);
  const to = (m: NumberState): Stack[] => {
    const digits = m === f.m ? f.digits + 1 : digit ? 1 : 0;
    const max = m === 'int' && f.integer ? MAX_DIGITS.integer : MAX_DIGITS[m as keyof typeof MAX_DIGITS];
    return max !== undefined && digits > max ? [] : [[...rest, { ...f, m, digits }]];
  };
  switch (f.m) {
    case 'minus':
      return digit ? to(ch === '0' ? 'zero' : 'int') : [];
    case 'dot':
      return digit ? to('frac') : [];
    case 'exp':
      return digit ? to('expDigits') : ch === '+' || ch === '-' ? to('expSign') : [];
    case 'expSign':
      return digit ? to('expDigits') : [];
  }
  // A number that may end here: more of it, or its end and the character read by the parent.
  if (digit && f.m !== 'zero') return to(f.m);
  if (!f.integer && ch === '.' && (f.m === 'zero' || f.m === 'int')) return to('dot');
  if (!f.integer && (ch === 'e' || ch === 'E') && f.m !== 'expDigits') return to('exp');
  return step(complete(rest), ch);
}

/**
 * A run of plain string characters (no quote, backslash or control character) from `text[i]` on,
 * read at once: the state after it and where it ends; null when a key cannot take them; undefined
 * when `stack` is not inside a string (or no such run starts at i). Most of a vocabulary fits
 * inside a string, so this is the common case of constrained decoding.
 */
export function stringRun(
  stack: Stack,
  text: string,
  i: number,
): { stack: Stack; end: number } | null | undefined {
  const top = stack.at(-1);
  if (top?.k !== 'string' || top.esc !== '') return undefined;
  let end = i;
  for (; end < text.length; end++) {
    const c = text.charCodeAt(end);
    if (c === 34 || c === 92 || c < 32) break;
  }
  if (end === i) return undefined;
  if (!top.isKey) return { stack, end };
  const key = top.text + text.slice(i, end);
  if (!keyMayStart(stack.at(-2) as ObjectFrame, key)) return null;
  return { stack: [...stack.slice(0, -1), { ...top, text: key }], end };
}
