type Mode =
  | 'start'
  | 'value'
  | 'value-or-close'
  | 'key-or-close'
  | 'key'
  | 'colon'
  | 'string'
  | 'escape'
  | 'unicode'
  | 'number'
  | 'literal'
  | 'after'
  | 'done';

const WS = new Set([' ', '\t', '\n', '\r']);
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);
const HEX = /^[0-9a-fA-F]$/;
const NUMBER = /^[0-9.eE+-]$/;

/**
 * Whether text read so far can still be the start of one JSON object (RFC 8259's grammar, numbers
 * checked loosely: their characters, not their shape), one character at a time: the recogniser
 * constrained decoding runs over each candidate token's text, as vLLM's structured-output backends
 * run a grammar over the vocabulary (`vllm/v1/structured_output`). `done` once the object closed.
 */
export class JsonObjectPrefix {
  private mode: Mode = 'start';
  private stack: string[] = [];
  private isKey = false;
  private literal = '';
  private hex = 0;

  get done(): boolean {
    return this.mode === 'done';
  }

  clone(): JsonObjectPrefix {
    const c = new JsonObjectPrefix();
    c.mode = this.mode;
    c.stack = this.stack.slice();
    c.isKey = this.isKey;
    c.literal = this.literal;
    c.hex = this.hex;
    return c;
  }

  /** Reads one character; false when no JSON object starts with what has been read. */
  feed(ch: string): boolean {
    switch (this.mode) {
      case 'start':
        if (WS.has(ch)) return true;
        return ch === '{' && this.open('{');
      case 'string':
        if (ch === '\\') this.mode = 'escape';
        else if (ch === '"') this.mode = this.isKey ? 'colon' : 'after';
        else if (ch < ' ') return false;
        return true;
      case 'escape':
        if (ch === 'u') {
          this.mode = 'unicode';
          this.hex = 0;
          return true;
        }
        this.mode = 'string';
        return ESCAPES.has(ch);
      case 'unicode':
        if (!HEX.test(ch)) return false;
        if (++this.hex === 4) this.mode = 'string';
        return true;
      case 'number':
        if (NUMBER.test(ch)) return true;
        this.mode = 'after';
        return this.feed(ch);
      case 'literal':
        if (this.literal[0] !== ch) return false;
        this.literal = this.literal.slice(1);
        if (this.literal === '') this.mode = 'after';
        return true;
      default:
        return this.structural(ch);
    }
  }

  private structural(ch: string): boolean {
    if (WS.has(ch)) return this.mode !== 'done';
    switch (this.mode) {
      case 'value-or-close':
        if (ch === ']') return this.close('[');
        return this.value(ch);
      case 'value':
        return this.value(ch);
      case 'key-or-close':
        if (ch === '}') return this.close('{');
        return this.key(ch);
      case 'key':
        return this.key(ch);
      case 'colon':
        if (ch !== ':') return false;
        this.mode = 'value';
        return true;
      case 'after': {
        const top = this.stack.at(-1);
        if (ch === ',') {
          this.mode = top === '{' ? 'key' : 'value';
          return true;
        }
        return (ch === '}' && top === '{') || (ch === ']' && top === '[') ? this.close(top) : false;
      }
      default:
        return false;
    }
  }

  private value(ch: string): boolean {
    if (ch === '{' || ch === '[') return this.open(ch);
    if (ch === '"') {
      this.mode = 'string';
      this.isKey = false;
      return true;
    }
    if (ch === '-' || (ch >= '0' && ch <= '9')) {
      this.mode = 'number';
      return true;
    }
    const word = ch === 't' ? 'true' : ch === 'f' ? 'false' : ch === 'n' ? 'null' : '';
    if (!word) return false;
    this.mode = 'literal';
    this.literal = word.slice(1);
    return true;
  }

  private key(ch: string): boolean {
    if (ch !== '"') return false;
    this.mode = 'string';
    this.isKey = true;
    return true;
  }

  private open(ch: string): boolean {
    this.stack.push(ch);
    this.mode = ch === '{' ? 'key-or-close' : 'value-or-close';
    return true;
  }

  private close(ch: string): boolean {
    this.stack.pop();
    this.mode = this.stack.length === 0 ? 'done' : 'after';
    void ch;
    return true;
  }
}
