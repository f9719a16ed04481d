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
export function createDumpsStream(): DumpsStream {
  return new DumpsStream();
}

/** The state machine of `createDumpsStream`. */
export class DumpsStream {
  private depth = 0;
  private inString = false;
  private esc: '' | '\\' | 'u' = '';
  private hex = '';
  private high = '';
  private num = '';
  private closed = false;

  /** Reads more of the text; returns what of the rewrite is now certain. */
  push(text: string): string {
    let out = '';
    for (let i = 0; i < text.length && !this.closed; i++) {
      const ch = text[i]!;
      if (this.inString) out += this.inside(ch);
      else if (this.num && NUMBER_CHAR.test(ch)) this.num += ch;
      else {
        if (this.num) out += this.endNumber();
        if (!this.closed) out += this.between(ch);
      }
    }
    return out;
  }

  /** Whether the value has closed. */
  get done(): boolean {
    return this.closed;
  }

  /** One decoded UTF-16 unit of a string; a high surrogate waits for its low half. */
  private unit(u: string): string {
    if (this.high) {
      const pair = this.high + u;
      this.high = '';
      if (isLow(u)) return quoted(pair);
      return quoted(pair.slice(0, 1)) + this.unit(u);
    }
    if (isHigh(u)) {
      this.high = u;
      return '';
    }
    return quoted(u);
  }

  private inside(ch: string): string {
    if (this.esc === 'u') {
      this.hex += ch;
      if (this.hex.length < 4) return '';
      this.esc = '';
      return this.unit(String.fromCharCode(Number.parseInt(this.hex, 16)));
    }
    if (this.esc === '\\') {
      if (ch === 'u') {
        this.esc = 'u';
        this.hex = '';
        return '';
      }
      this.esc = '';
      return this.unit(ESCAPES[ch] ?? ch);
    }
    if (ch === '\\') {
      this.esc = '\\';
      return '';
    }
    if (ch !== '"') return this.unit(ch);
    this.inString = false;
    const pending = this.high ? quoted(this.high) : '';
    this.high = '';
    if (this.depth === 0) this.closed = true;
    return `${pending}"`;
  }

  private endNumber(): string {
    let out: string;
    try {
      out = JSON.stringify(JSON.parse(this.num));
    } catch {
      out = this.num; // not a number after all: the final parse will fail too
    }
    this.num = '';
    if (this.depth === 0) this.closed = true;
    return out;
  }

  private between(ch: string): string {
    if (WS.has(ch)) return '';
    if (ch === '{' || ch === '[') this.depth += 1;
    else if (ch === '}' || ch === ']') {
      this.depth -= 1;
      if (this.depth <= 0) this.closed = true;
    } else if (ch === ',') return ', ';
    else if (ch === ':') return ': ';
    else if (ch === '"') this.inString = true;
    else if (ch === '-' || (ch >= '0' && ch <= '9')) {
      this.num = ch;
      return '';
    }
    return ch;
  }
}
