import type { Deadline } from '../deadline.js';
import { LIMITS } from '../limits.js';
import type { Node } from './ast.js';
import { ExpressionParser, mulOf, numberNode } from './expression-parser.js';
import { ParseFailure, tokenize } from './tokenize.js';
import { FUNCTIONS, GREEK, GREEK_CONST, KNOWN_COMMANDS, MATRIX_ENVS, UNSUPPORTED } from './vocabulary.js';

/** Atoms: numbers, symbols, brackets, commands (\\frac, \\sqrt, functions), environments (matrices). */
class Parser extends ExpressionParser {
  protected primary(): Node {
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
    // an operator or relation where a value should be (`\\ge 0`) is not a value
    if (UNSUPPORTED.has(name) || KNOWN_COMMANDS.has(name))
      throw new ParseFailure(`unsupported command \\${name}`);
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

/** Parses one normalised answer string; throws `ParseFailure` when it is not maths we understand. */
export function parseLatex(src: string, deadline: Deadline): Node {
  if (src.length > LIMITS.maxAnswerChars) throw new ParseFailure('answer too long');
  const tokens = tokenize(src, deadline);
  if (tokens.length === 0) throw new ParseFailure('empty answer');
  return new Parser(tokens, deadline).parseTop();
}
