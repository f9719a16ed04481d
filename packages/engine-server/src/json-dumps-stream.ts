import { ESCAPES, WS } from './json-grammar.js';

const NUMBER_CHAR = /^[0-9.eE+-]$/;
const isHigh = (u: string) => u >= '\uD800' && u <= '\uDBFF';
const isLow = (u: string) => u >= '\uDC00' && u <= '\uDFFF';
/** One string's characters as JSON.stringify writes them inside the quotes. */
const quoted = (s: string) => JSON.stringify(s).slice(1, -1);

/**
 * A JSON value's text rewritten, as it arrives, into the spelling of Python's
 * `json.dumps(json.loads(text), ensure_ascii=False)` — how vLLM's Hermes parser serialises a
 * call's `arguments` (and `pythonJsonDumps` here): whitespace between tokens dropped, `", "` and
 * `": "` as separators, strings re-escaped as JSON.stringify writes them (`\u00e9` → `é`, `\/` →
 * `/`), a number written once it ends, as its value (`1.0` → `1`). Only characters no later input
 * can change leave, so the pieces of a stream join to the rewrite of the whole; after the value
 * closes, the rest is ignored. Keys keep their written order (Python's, where JSON.parse puts
 * integer-like keys first); a repeated key is written twice (json.loads keeps the last).
 */
export function createDumpsStream() {
  let depth = 0;
  let inString = false;
  let esc: '' | '\\' | 'u' = '';
  let hex = '';
  let high = '';
  let num = '';
  let done = false;

  /** One decoded UTF-16 unit of a string; a high surrogate waits for its low half. */
  const unit = (u: string): string => {
    if (high) {
      const pair = high + u;
      high = '';
      if (isLow(u)) return quoted(pair);
      return quoted(pair.slice(0, 1)) + unit(u);
    }
    if (isHigh(u)) {
      high = u;
      return '';
    }
    return quoted(u);
  };

  const inside = (ch: string): string => {
    if (esc === 'u') {
      hex += ch;
      if (hex.length < 4) return '';
      esc = '';
      return unit(String.fromCharCode(Number.parseInt(hex, 16)));
    }
    if (esc === '\\') {
      if (ch === 'u') {
        esc = 'u';
        hex = '';
        return '';
      }
      esc = '';
      return unit(ESCAPES[ch] ?? ch);
    }
    if (ch === '\\') {
      esc = '\\';
      return '';
    }
    if (ch !== '"') return unit(ch);
    inString = false;
    const pending = high ? quoted(high) : '';
    high = '';
    if (depth === 0) done = true;
    return `${pending}"`;
  };

  const endNumber = (): string => {
    let out: string;
    try {
      out = JSON.stringify(JSON.parse(num));
    } catch {
      out = num; // not a number after all: the final parse will fail too
    }
    num = '';
    if (depth === 0) done = true;
    return out;
  };

  const between = (ch: string): string => {
    if (WS.has(ch)) return '';
    if (ch === '{' || ch === '[') depth += 1;
    else if (ch === '}' || ch === ']') {
      depth -= 1;
      if (depth <= 0) done = true;
    } else if (ch === ',') return ', ';
    else if (ch === ':') return ': ';
    else if (ch === '"') inString = true;
    else if (ch === '-' || (ch >= '0' && ch <= '9')) {
      num = ch;
      return '';
    }
    return ch;
  };

  return {
    /** Reads more of the text; returns what of the rewrite is now certain. */
    push(text: string): string {
      let out = '';
      for (let i = 0; i < text.length && !done; i++) {
        const ch = text[i]!;
        if (inString) out += inside(ch);
        else if (num && NUMBER_CHAR.test(ch)) num += ch;
        else {
          if (num) out += endNumber();
          if (!done) out += between(ch);
        }
      }
      return out;
    },
    /** Whether the value has closed. */
    get done(): boolean {
      return done;
    },
  };
}
