import type { Deadline } from '../deadline.js';
import { LIMITS } from '../limits.js';
import { rat, ratFromDecimal } from '../math/rational.js';
import { type Node, num, type RelOp, type TermSign } from './ast.js';
import { ParseFailure, type Token, tokenize } from './tokenize.js';

const RELOPS: Record<string, RelOp> = {
  '=': '=',
  '<': '<',
  '>': '>',
  le: '<=',
  leq: '<=',
  leqslant: '<=',
  lt: '<',
  ge: '>=',
  geq: '>=',
  geqslant: '>=',
  gt: '>',
  neq: '!=',
  ne: '!=',
  approx: '~',
  in: 'in',
};
const FUNCTIONS = new Set([
  'sin',
  'cos',
  'tan',
  'sec',
  'csc',
  'cot',
  'arcsin',
  'arccos',
  'arctan',
  'sinh',
  'cosh',
  'tanh',
  'ln',
  'log',
  'lg',
  'exp',
  'det',
  'gcd',
  'lcm',
  'max',
  'min',
]);
const GREEK_CONST: Record<string, Node> = {
  pi: { k: 'const', name: 'pi' },
  infty: { k: 'const', name: 'inf' },
  infinity: { k: 'const', name: 'inf' },
  emptyset: { k: 'const', name: 'empty' },
  varnothing: { k: 'const', name: 'empty' },
};
const GREEK = new Set([
  'alpha',
  'beta',
  'gamma',
  'delta',
  'epsilon',
  'varepsilon',
  'zeta',
  'eta',
  'theta',
  'vartheta',
  'iota',
  'kappa',
  'lambda',
  'mu',
  'nu',
  'xi',
  'rho',
  'sigma',
  'tau',
  'upsilon',
  'phi',
  'varphi',
  'chi',
  'psi',
  'omega',
  'Gamma',
  'Delta',
  'Theta',
  'Lambda',
  'Xi',
  'Pi',
  'Sigma',
  'Phi',
  'Psi',
  'Omega',
]);
/** Commands that mean something we do not model: the answer is compared as a string instead. */
const UNSUPPORTED = new Set([
  'int',
  'sum',
  'prod',
  'lim',
  'to',
  'rightarrow',
  'Rightarrow',
  'implies',
  'iff',
  'mid',
  'dots',
  'ldots',
  'cdots',
  'equiv',
  'pmod',
  'bmod',
  'mod',
  'cap',
  'rangle',
  'rfloor',
  'rceil',
  'rvert',
  'colon',
  'circ',
  'angle',
  'triangle',
  'perp',
  'parallel',
  'sim',
  'cong',
  'prime',
]);
const MATRIX_ENVS = new Set(['pmatrix', 'bmatrix', 'matrix', 'vmatrix', 'Bmatrix', 'array', 'smallmatrix']);
const SEPARATOR_WORDS = /^\s*(?:,|;|and|or|,\s*and|,\s*or|as well as)\s*$/i;

/** Recursive-descent parser over the tokens of one answer. Depth and size are bounded. */
class Parser {
  private i = 0;
  private depth = 0;
  private absDepth = 0;

  constructor(
    private readonly t: Token[],
    private readonly deadline: Deadline,
  ) {}

  parseTop(): Node {
    const node = this.list(true, null);
    if (this.i < this.t.length) throw new ParseFailure(`unexpected ${this.describe(this.peek())}`);
    return node;
  }

  private peek(o = 0): Token | undefined {
    return this.t[this.i + o];
  }
  private isOp(s: string, o = 0): boolean {
    const x = this.peek(o);
    return x !== undefined && x.k === 'op' && x.s === s;
  }
  private isCmd(s: string, o = 0): boolean {
    const x = this.peek(o);
    return x !== undefined && x.k === 'cmd' && x.s === s;
  }
  private expectOp(s: string): void {
    if (!this.isOp(s)) throw new ParseFailure(`expected ${s}, found ${this.describe(this.peek())}`);
    this.i++;
  }
  private describe(x: Token | undefined): string {
    return x ? `${x.k} ${JSON.stringify(x.s)}` : 'end of input';
  }
  private enter(): void {
    this.deadline.check();
    if (++this.depth > LIMITS.maxDepth) throw new ParseFailure('nesting too deep');
  }
  private leave(): void {
    this.depth--;
  }

  private isSeparator(allowWords: boolean): boolean {
    const x = this.peek();
    if (!x) return false;
    if (x.k === 'op' && (x.s === ',' || x.s === ';')) return true;
    return allowWords && x.k === 'text' && SEPARATOR_WORDS.test(x.s);
  }

  /** item (sep item)*: one item is returned as is, several as a list. */
  private list(top: boolean, close: string[] | null): Node {
    const items: Node[] = [];
    for (;;) {
      while (top && this.isSeparator(true)) this.i++;
      if (this.i >= this.t.length) break;
      if (close && this.peekClose(close)) break;
      items.push(this.relation());
      if (items.length > LIMITS.maxItems) throw new ParseFailure('too many items');
      if (!this.isSeparator(top)) break;
      this.i++;
    }
    if (items.length === 0) throw new ParseFailure('empty answer');
    return items.length === 1 ? (items[0] as Node) : { k: 'list', items };
  }

  private peekClose(close: string[]): boolean {
    const x = this.peek();
    return x !== undefined && (x.k === 'op' || x.k === 'cmd') && close.includes(x.s);
  }

  private relation(): Node {
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

  private setExpr(): Node {
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

  private additive(): Node {
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

  private term(): Node {
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

  private startsImplicit(x: Token): boolean {
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

  private unary(): Node {
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

  private postfix(): Node {
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

  private power(): Node {
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
  private rawArg(): string {
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
  private scriptArg(): Node {
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

  private braced(): Node {
    this.enter();
    this.expectOp('{');
    const inner = this.list(false, ['}']);
    this.expectOp('}');
    this.leave();
    return inner;
  }

  private primary(): Node {
    this.enter();
    try {
      return this.primaryInner();
    } finally {
      this.leave();
    }
  }

  private primaryInner(): Node {
    const x = this.peek();
    if (!x) throw new ParseFailure('unexpected end of input');
    this.i++;
    switch (x.k) {
      case 'num':
        return numberNode(x.s);
      case 'id':
        return { k: 'sym', name: x.s };
      case 'text':
        return { k: 'text', s: x.s };
      case 'begin':
        return this.environment(x.s);
      case 'end':
        throw new ParseFailure(`unexpected \\end{${x.s}}`);
      case 'op':
        return this.bracketed(x.s);
      case 'cmd':
        return this.command(x.s);
    }
  }

  private bracketed(open: string): Node {
    if (open === '{') {
      this.i--;
      return this.braced();
    }
    if (open === '(' || open === '[') {
      const inner = this.list(false, [')', ']']);
      const close = this.peek();
      if (close?.k !== 'op' || (close.s !== ')' && close.s !== ']'))
        throw new ParseFailure(`unclosed ${open}`);
      this.i++;
      if (inner.k === 'list') return { k: 'tuple', open, close: close.s as ')' | ']', items: inner.items };
      return inner;
    }
    if (open === '\\{') {
      if (this.isOp('\\}')) {
        this.i++;
        return { k: 'set', items: [] };
      }
      const inner = this.list(false, ['\\}']);
      this.expectOp('\\}');
      return { k: 'set', items: inner.k === 'list' ? inner.items : [inner] };
    }
    if (open === '|') {
      this.absDepth++;
      const inner = this.additive();
      this.absDepth--;
      this.expectOp('|');
      return { k: 'fn', name: 'abs', args: [inner] };
    }
    throw new ParseFailure(`unexpected ${open}`);
  }

  private command(name: string): Node {
    if (name in GREEK_CONST) return GREEK_CONST[name] as Node;
    if (GREEK.has(name)) return { k: 'sym', name: `\\${name}` };
    switch (name) {
      case 'frac':
      case 'dfrac':
      case 'tfrac':
      case 'cfrac': {
        const a = this.scriptArg();
        const b = this.scriptArg();
        return { k: 'div', a, b };
      }
      case 'binom':
      case 'dbinom':
      case 'tbinom':
        return { k: 'fn', name: 'binom', args: [this.scriptArg(), this.scriptArg()] };
      case 'sqrt': {
        if (this.isOp('[')) {
          this.i++;
          const n = this.additive();
          this.expectOp(']');
          return { k: 'fn', name: 'root', args: [this.scriptArg(), n] };
        }
        return { k: 'fn', name: 'sqrt', args: [this.scriptArg()] };
      }
      case 'lvert':
      case 'vert': {
        const inner = this.additive();
        if (!this.isCmd('rvert') && !this.isCmd('vert')) throw new ParseFailure('unclosed \\lvert');
        this.i++;
        return { k: 'fn', name: 'abs', args: [inner] };
      }
      case 'lfloor':
      case 'lceil': {
        const inner = this.additive();
        const close = name === 'lfloor' ? 'rfloor' : 'rceil';
        if (!this.isCmd(close)) throw new ParseFailure(`unclosed \\${name}`);
        this.i++;
        return { k: 'fn', name: name === 'lfloor' ? 'floor' : 'ceil', args: [inner] };
      }
      case 'langle': {
        const inner = this.list(false, ['rangle']);
        if (!this.isCmd('rangle')) throw new ParseFailure('unclosed \\langle');
        this.i++;
        return { k: 'tuple', open: '(', close: ')', items: inner.k === 'list' ? inner.items : [inner] };
      }
    }
    if (FUNCTIONS.has(name)) return this.func(name);
    if (UNSUPPORTED.has(name)) throw new ParseFailure(`unsupported command \\${name}`);
    // an unknown command is a named quantity (\zzz), never a reason to drop the answer
    return { k: 'sym', name: `\\${name}` };
  }

  private func(name: string): Node {
    let power: Node | undefined;
    let base: Node | undefined;
    for (;;) {
      if (this.isOp('^')) {
        this.i++;
        power = this.scriptArg();
      } else if (this.isOp('_')) {
        this.i++;
        base = this.scriptArg();
      } else break;
    }
    let args: Node[];
    if (this.isOp('(')) {
      this.i++;
      const inner = this.list(false, [')']);
      this.expectOp(')');
      args = inner.k === 'list' ? inner.items : [inner];
    } else {
      // \sin 2x, \sin b \cos a: the run of numbers and letters that follows
      const fs: Node[] = [this.power()];
      while (this.peek()?.k === 'num' || this.peek()?.k === 'id') fs.push(this.power());
      args = [mulOf(fs)];
    }
    const fname = name === 'lg' ? 'log10' : name === 'log' && base ? 'logb' : name;
    const all = fname === 'logb' && base ? [...args, base] : args;
    const node: Node = { k: 'fn', name: fname, args: all };
    if (!power) return node;
    // \sin^{-1} is the inverse function; any other power applies to the value.
    if (power.k === 'add' && power.terms.length === 1 && power.terms[0]?.sign === -1) {
      const inner = power.terms[0].x;
      if (inner.k === 'num' && inner.v.n === 1n && inner.v.d === 1n && ['sin', 'cos', 'tan'].includes(name))
        return { k: 'fn', name: `arc${name}`, args };
    }
    return { k: 'pow', b: node, e: power };
  }

  private environment(env: string): Node {
    if (!MATRIX_ENVS.has(env)) {
      // align, equation, cases...: parse the body as an ordinary answer
      const inner = this.list(true, []);
      return inner;
    }
    const rows: Node[][] = [[]];
    let cells = 0;
    for (;;) {
      this.deadline.check();
      const x = this.peek();
      if (!x) throw new ParseFailure(`unclosed ${env}`);
      if (x.k === 'end') {
        this.i++;
        break;
      }
      if (x.k === 'op' && x.s === '\\\\') {
        this.i++;
        rows.push([]);
        continue;
      }
      if (x.k === 'op' && x.s === '&') {
        this.i++;
        continue;
      }
      (rows[rows.length - 1] as Node[]).push(this.additive());
      if (++cells > LIMITS.maxItems) throw new ParseFailure('matrix too large');
    }
    const kept = rows.filter((r) => r.length > 0);
    if (kept.length === 0) throw new ParseFailure('empty matrix');
    return { k: 'matrix', rows: kept };
  }
}

function mulOf(fs: Node[]): Node {
  if (fs.length === 0) throw new ParseFailure('empty product');
  return fs.length === 1 ? (fs[0] as Node) : { k: 'mul', fs };
}

function numberNode(s: string): Node {
  const dot = s.indexOf('.');
  return num(ratFromDecimal(s), dot >= 0 ? s.length - dot - 1 : null);
}

/** `204_5`: digits read in base 2..36 when valid, else a parse failure. */
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

/** Parses one normalised answer string; throws `ParseFailure` when it is not maths we understand. */
export function parseLatex(src: string, deadline: Deadline): Node {
  if (src.length > LIMITS.maxAnswerChars) throw new ParseFailure('answer too long');
  const tokens = tokenize(src, deadline);
  if (tokens.length === 0) throw new ParseFailure('empty answer');
  return new Parser(tokens, deadline).parseTop();
}
