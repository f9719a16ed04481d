import { complete, type Frame, namedKeys, type ObjectFrame, type Stack } from './json-grammar.js';
import type { SchemaNode } from './json-schema-node.js';

/** The shortest value of one of `alts` this module can name (null if none, or nested too deep). */
function minimalValue(alts: readonly SchemaNode[], depth = 0): string | null {
  if (depth > 16) return null;
  for (const node of alts) {
    if (node.literals) return node.literals[0] ?? null;
    const t = node.types;
    if (t.has('null')) return 'null';
    if (t.has('boolean')) return 'false';
    if (t.has('integer') || t.has('number')) return '0';
    if (t.has('string')) return '""';
    if (t.has('array')) return '[]';
    if (!t.has('object')) continue;
    const members = node.required.map((k) => {
      const v = minimalValue(node.properties.get(k) ?? node.additional ?? [], depth + 1);
      return v === null ? null : `${JSON.stringify(k)}:${v}`;
    });
    if (members.every((m) => m !== null)) return `{${members.join(',')}}`;
  }
  return null;
}

/** A key `text` can grow into: a named one still free, or (any key allowed) one not yet written. */
function keyFrom(f: ObjectFrame, text: string): string | null {
  const names = namedKeys(f);
  if (names !== null) return names.find((k) => k.startsWith(text)) ?? null;
  let key = text;
  while (f.used.includes(key)) key += '_';
  return key;
}

/** Text closing every open construct of `stack` into an accepted value (null: found none). */
export function finish(stack: Stack): string | null {
  let out = '';
  let cur = stack;
  for (let guard = 0; guard < 10_000; guard++) {
    const top = cur.at(-1);
    if (!top) return out;
    const rest = cur.slice(0, -1);
    switch (top.k) {
      case 'value': {
        const v = minimalValue(top.alts);
        if (v === null) return null;
        out += v;
        cur = complete(rest);
        break;
      }
      case 'string': {
        if (!top.isKey) {
          out += `${top.esc === '\\' ? 'n' : top.esc === 'u' ? '0'.repeat(4 - top.hex.length) : ''}"`;
          cur = complete(rest);
          break;
        }
        const key = finishKey(rest.at(-1) as ObjectFrame, top);
        if (key === null) return null;
        out += key.text;
        cur = [...rest.slice(0, -1), { ...(rest.at(-1) as ObjectFrame), m: 'colon', key: key.key }];
        break;
      }
      case 'number':
        out += top.m === 'minus' || top.m === 'dot' || top.m === 'exp' || top.m === 'expSign' ? '0' : '';
        cur = complete(rest);
        break;
      case 'literal': {
        const t = top.texts.find((s) => s.startsWith(top.typed));
        if (t === undefined) return null;
        out += t.slice(top.typed.length);
        cur = complete(rest);
        break;
      }
      case 'array':
        out += ']';
        cur = complete(rest);
        break;
      case 'object': {
        const next = finishObject(rest, top);
        if (next === null) return null;
        out += next.text;
        cur = next.stack;
        break;
      }
    }
  }
  return null;
}

/** The rest of a key being written (its pending escape too) and the key it names. */
function finishKey(
  parent: ObjectFrame,
  f: Extract<Frame, { k: 'string' }>,
): { text: string; key: string } | null {
  let text = f.text;
  let out = '';
  if (f.esc !== '') {
    // The escape's character: the next one of a key the text can grow into.
    const key = namedKeys(parent)?.find(
      (k) => k.startsWith(text) && k.length > text.length && escFits(k, text, f),
    );
    const code =
      key !== undefined
        ? key.charCodeAt(text.length)
        : f.esc === 'u'
          ? Number.parseInt(f.hex.padEnd(4, '0'), 16)
          : 10;
    if (key === undefined && namedKeys(parent) !== null) return null;
    const hex = code.toString(16).padStart(4, '0');
    out += f.esc === 'u' ? hex.slice(f.hex.length) : `u${hex}`;
    text += String.fromCharCode(code);
  }
  const key = keyFrom(parent, text);
  if (key === null) return null;
  return { text: `${out + JSON.stringify(key.slice(text.length)).slice(1, -1)}"`, key };
}

/** Whether the pending escape of `f` can still write the character of `key` after `text`. */
function escFits(key: string, text: string, f: Extract<Frame, { k: 'string' }>): boolean {
  if (f.esc === '\\') return true;
  return key.charCodeAt(text.length).toString(16).padStart(4, '0').startsWith(f.hex.toLowerCase());
}

/** Closes an object: its missing required keys with their shortest values, then `}`. */
function finishObject(rest: Stack, f: ObjectFrame): { text: string; stack: Stack } | null {
  if (f.m === 'colon')
    return {
      text: ':',
      stack: [
        ...rest,
        { ...f, m: 'member' },
        { k: 'value', alts: f.node.properties.get(f.key) ?? f.node.additional ?? [] },
      ],
    };
  const missing = f.node.required.filter((r) => !f.used.includes(r));
  let key = missing[0];
  if (key === undefined && f.m !== 'key') return { text: '}', stack: complete(rest) };
  key ??= keyFrom(f, '') ?? undefined;
  if (key === undefined) return null;
  const alts = f.node.properties.get(key) ?? f.node.additional ?? [];
  return {
    text: `${f.m === 'after' ? ',' : ''}${JSON.stringify(key)}:`,
    stack: [...rest, { ...f, m: 'member', key }, { k: 'value', alts }],
  };
}
