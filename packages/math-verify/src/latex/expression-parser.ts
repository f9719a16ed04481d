import type { Deadline } from '../deadline.js';
import { LIMITS } from '../limits.js';
import { rat, ratFromDecimal } from '../math/rational.js';
import { type Node, num, type RelOp, type TermSign } from './ast.js';
import { ParseFailure, type Token } from './tokenize.js';
import { FUNCTIONS, GREEK, GREEK_CONST, RELOPS } from './vocabulary.js';

const SEPARATOR_WORDS = /^\s*(?:,|;|and|or|,\s*and|,\s*or|as well as)\s*$/i;

/**
 * Recursive-descent parser over the tokens of one answer, depth and size bounded: token helpers and
 * the operator-precedence levels (list, relation, set operation, sum, product, power); the atoms
 * (`primary()`) are left to the subclass in parse.ts.
 */
export abstract class ExpressionParser {
  protected i = 0;
  protected depth = 0;
  protected absDepth = 0;

  constructor(
    protected readonly t: Token[],
    protected readonly deadline: Deadline,
  ) {}

  parseTop(): Node {
    const node = this.list(true, null);
    if (this.i < this.t.length) throw new ParseFailure(`unexpected ${this.describe(this.peek())}`);
    return node;
  }

  protected peek(o = 0): Token | undefined {
    return this.t[this.i + o];
  }
  protected isOp(s: string, o = 0): boolean {
    const x = this.peek(o);
    return x !== undefined && x.k === 'op' && x.s === s;
  }
  protected isCmd(s: string, o = 0): boolean {
    const x = this.peek(o);
    return x !== undefined && x.k === 'cmd' && x.s === s;
  }
  protected expectOp(s: string): void {
    if (!this.isOp(s)) throw new ParseFailure(`expected ${s}, found ${this.describe(this.peek())}`);
    this.i++;
  }
  protected describe(x: Token | undefined): string {
    return x ? `${x.k} ${JSON.stringify(x.s)}` : 'end of input';
  }
  protected enter(): void {
    this.deadline.check();
    if (++this.depth > LIMITS.maxDepth) throw new ParseFailure('nesting too deep');
  }
  protected leave(): void {
    this.depth--;
  }

  protected isSeparator(allowWords: boolean): boolean {
    const x = this.peek();
    if (!x) return false;
    if (x.k === 'op' && (x.s === ',' || x.s === ';')) return true;
    return allowWords && x.k === 'text' && SEPARATOR_WORDS.test(x.s);
  }

  /** item (sep item)*: one item is returned as is, several as a list. */
  protected list(top: boolean, close: string[] | null): Node {
    const items: Node[] = [];
    // indexes after which a ';' separated groups: `p=5,q=2; p=7,q=2`
    const groupEnds: number[] = [];
    for (;;) {
      while (top && this.isSeparator(true)) this.i++;
      if (this.i >= this.t.length) break;
      if (close && this.peekClose(close)) break;
      items.push(this.relation());
      if (items.length > LIMITS.maxItems) throw new ParseFailure('too many items');
      if (!this.isSeparator(top)) break;
      if (this.isOp(';')) groupEnds.push(items.length);
      this.i++;
    }
    if (items.length === 0) throw new ParseFailure('empty answer');
    if (top && groupEnds.length > 0) return groupAssignments(items, groupEnds);
    return items.length === 1 ? (items[0] as Node) : { k: 'list', items };
  }

  protected peekClose(close: string[]): boolean {
    const x = this.peek();
    return x !== undefined && (x.k === 'op' || x.k === 'cmd') && close.includes(x.s);
  }

  protected relation(): Node {
    const parts = [this.setExpr()];
    const ops: RelOp[] = [];
    for (;;) {
      const x = this.peek();
      if (!x) break;
      const op =
        x.k === 'op' && (x.s === '=' || x.s === '<' || x.s === '>')
          ? RELOPS[x.s]
          : x.k === 'cmd'
            ? RELOPS[x.s]
            : undefined;
      if (!op) break;
      this.i++;
      ops.push(op);
      parts.push(this.setExpr());
    }
    return ops.length === 0 ? (parts[0] as Node) : { k: 'rel', ops, parts };
  }

  protected setExpr(): Node {
    const first = this.additive();
    const x = this.peek();
    if (x?.k !== 'cmd' || !['cup', 'cap', 'setminus'].includes(x.s)) return first;
    const op = x.s === 'cup' ? 'cup' : x.s === 'cap' ? 'cap' : 'minus';
    const parts = [first];
    while (this.isCmd(x.s)) {
      this.i++;
      parts.push(this.additive());
    }
    return { k: 'setop', op, parts };
  }

  protected additive(): Node {
    this.enter();
    const terms: { sign: TermSign; x: Node }[] = [];
    let sign: TermSign = 1;
    if (this.isOp('-')) {
      sign = -1;
      this.i++;
    } else if (this.isOp('+')) this.i++;
    else if (this.isCmd('pm') || this.isCmd('mp')) {
      sign = this.isCmd('pm') ? 'pm' : 'mp';
      this.i++;
    }
    terms.push({ sign, x: this.term() });
    for (;;) {
      if (this.isOp('+')) sign = 1;
      else if (this.isOp('-')) sign = -1;
      else if (this.isCmd('pm')) sign = 'pm';
      else if (this.isCmd('mp')) sign = 'mp';
      else break;
      this.i++;
      terms.push({ sign, x: this.term() });
    }
    this.leave();
    return terms.length === 1 && terms[0]?.sign === 1 ? terms[0].x : { k: 'add', terms };
  }

  protected term(): Node {
    let fs: Node[] = [this.unary()];
    const units: string[] = [];
    for (;;) {
      this.deadline.check();
      const x = this.peek();
      if (!x) break;
      if (x.k === 'cmd' && (x.s === 'cdot' || x.s === 'times' || x.s === 'ast')) {
        this.i++;
        fs.push(this.unary());
      } else if ((x.k === 'op' && x.s === '/') || (x.k === 'cmd' && x.s === 'div')) {
        this.i++;
        const b = this.unary();
        fs = [{ k: 'div', a: mulOf(fs), b }];
      } else if (x.k === 'op' && x.s === '*') {
        this.i++;
        fs.push(this.unary());
      } else if (x.k === 'op' && x.s === ':') {
        this.i++;
        const b = this.unary();
        fs = [{ k: 'div', a: mulOf(fs), b, ratio: true }];
      } else if (x.k === 'text' && !SEPARATOR_WORDS.test(x.s)) {
        // prose after maths is a unit ("10 \text{ cm}"): dropped
        units.push(x.s);
        this.i++;
      } else if (this.startsImplicit(x)) {
        const prev = fs[fs.length - 1];
        const isCall = prev?.k === 'sym' && x.k === 'op' && x.s === '(';
        const next = this.unary();
        if (isCall && fs.length === 1) fs = [{ k: 'mul', fs: [prev as Node, next], call: true }];
        else fs.push(next);
      } else break;
    }
    const onlyText = fs.every((f) => f.k === 'text');
    if (onlyText && units.length > 0)
      return { k: 'text', s: [...fs.map((f) => (f as { s: string }).s), ...units].join(' ') };
    const kept = fs.filter((f) => f.k !== 'text' || fs.every((g) => g.k === 'text'));
    return mulOf(kept);
  }

  protected startsImplicit(x: Token): boolean {
    if (x.k === 'num' || x.k === 'id' || x.k === 'begin') return true;
    if (x.k === 'op') return x.s === '(' || x.s === '\\{' || (x.s === '|' && this.absDepth === 0);
    if (x.k === 'cmd')
      return (
        x.s === 'frac' ||
        x.s === 'dfrac' ||
        x.s === 'tfrac' ||
        x.s === 'cfrac' ||
        x.s === 'sqrt' ||
        x.s === 'binom' ||
        FUNCTIONS.has(x.s) ||
        GREEK.has(x.s) ||
        x.s in GREEK_CONST ||
        x.s === 'lvert' ||
        x.s === 'lfloor' ||
        x.s === 'lceil'
      );
    return false;
  }

  protected unary(): Node {
    if (this.isOp('-')) {
      this.i++;
      return { k: 'add', terms: [{ sign: -1, x: this.unary() }] };
    }
    if (this.isOp('+')) {
      this.i++;
      return this.unary();
    }
    return this.postfix();
  }

  protected postfix(): Node {
    let x = this.power();
    for (;;) {
      if (this.isOp('!') && !this.isOp('=', 1)) {
        this.i++;
        x = { k: 'fn', name: 'fact', args: [x] };
      } else if (this.isOp('%')) {
        this.i++;
        x = { k: 'pct', x };
      } else if (this.isOp("'")) {
        this.i++;
        if (x.k === 'sym') x = { k: 'sym', name: `${x.name}'` };
      } else break;
    }
    return x;
  }

  protected power(): Node {
    let base = this.primary();
    for (;;) {
      if (this.isOp('_')) {
        this.i++;
        const sub = this.rawArg();
        if (base.k === 'sym') base = { k: 'sym', name: `${base.name}_${sub}` };
        else if (base.k === 'num' && base.dec === null && /^\d+$/.test(sub))
          base = fromBase(base, Number(sub));
        else if (base.k === 'fn' && (base.name === 'log' || base.name === 'lg')) continue;
        else throw new ParseFailure('subscript on a non-symbol');
      } else if (this.isOp('^')) {
        this.i++;
        const e = this.scriptArg();
        base = { k: 'pow', b: base, e };
      } else break;
    }
    return base;
  }

  /** A subscript as a name: `1`, `{12}`, `n`, `{AB}`. */
  protected rawArg(): string {
    const x = this.peek();
    if (!x) throw new ParseFailure('missing subscript');
    if (x.k === 'op' && x.s === '{') {
      let depth = 0;
      let s = '';
      for (; this.i < this.t.length; this.i++) {
        const y = this.t[this.i] as Token;
        if (y.k === 'op' && y.s === '{') depth++;
        else if (y.k === 'op' && y.s === '}') {
          depth--;
          if (depth === 0) {
            this.i++;
            return s;
          }
        } else s += y.s;
      }
      throw new ParseFailure('unclosed subscript');
    }
    this.i++;
    if (x.k === 'num' && x.s.length > 1) {
      this.t.splice(this.i, 0, { k: 'num', s: x.s.slice(1) });
      return x.s[0] as string;
    }
    return x.s;
  }

  /** The argument of ^, \frac, \sqrt: a braced group, or one digit / letter / command. */
  protected scriptArg(): Node {
    const x = this.peek();
    if (!x) throw new ParseFailure('missing argument');
    if (x.k === 'op' && x.s === '{') return this.braced();
    if (x.k === 'num') {
      this.i++;
      if (x.s.length > 1 && !x.s.startsWith('.')) this.t.splice(this.i, 0, { k: 'num', s: x.s.slice(1) });
      return numberNode(x.s.length > 1 && !x.s.startsWith('.') ? (x.s[0] as string) : x.s);
    }
    if (x.k === 'op' && x.s === '-') {
      this.i++;
      return { k: 'add', terms: [{ sign: -1, x: this.scriptArg() }] };
    }
    return this.primary();
  }

  protected braced(): Node {
    this.enter();
    this.expectOp('{');
    const inner = this.list(false, ['}']);
    this.expectOp('}');
    this.leave();
    return inner;
  }

  protected abstract primary(): Node;
}

function isAssignment(n: Node): boolean {
  return n.k === 'rel' && n.ops.length === 1 && n.ops[0] === '=' && n.parts[0]?.k === 'sym';
}

/**
 * `p=5,q=2; p=7,q=2` is two solutions (5,2) and (7,2): when every ';'-separated group is at least
 * two `name = value` items, each group becomes the tuple of its values. Otherwise a flat list.
 */
function groupAssignments(items: Node[], ends: number[]): Node {
  const bounds = [0, ...ends, items.length].filter((b, i, a) => i === 0 || b > (a[i - 1] as number));
  const groups = bounds.slice(1).map((end, i) => items.slice(bounds[i], end));
  if (groups.length > 1 && groups.every((g) => g.length >= 2 && g.every(isAssignment)))
    return {
      k: 'list',
      items: groups.map((g) => ({
        k: 'tuple',
        open: '(',
        close: ')',
        items: g.map((n) => (n as { parts: Node[] }).parts[1] as Node),
      })),
    };
  return items.length === 1 ? (items[0] as Node) : { k: 'list', items };
}

export function mulOf(fs: Node[]): Node {
  if (fs.length === 0) throw new ParseFailure('empty product');
  return fs.length === 1 ? (fs[0] as Node) : { k: 'mul', fs };
}

export function numberNode(s: string): Node {
  const dot = s.indexOf('.');
  return num(ratFromDecimal(s), dot >= 0 ? s.length - dot - 1 : null);
}

export /** `204_5`: digits read in base 2..36 when valid, else a parse failure. */
function fromBase(n: Node & { k: 'num' }, base: number): Node {
  if (base < 2 || base > 36) throw new ParseFailure('bad base');
  const digits = n.v.n.toString();
  let v = 0n;
  for (const ch of digits) {
    const d = Number(ch);
    if (d >= base) throw new ParseFailure('digit out of base');
    v = v * BigInt(base) + BigInt(d);
  }
  return num(rat(v));
}
