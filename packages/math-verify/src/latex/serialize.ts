import type { Node } from './ast.js';

/** A canonical text form of a parsed answer, for names (`a_{3}` = `a_3`) and the `extracted` field. */
export function canonicalNode(n: Node): string {
  switch (n.k) {
    case 'num':
      return n.v.d === 1n ? n.v.n.toString() : `${n.v.n}/${n.v.d}`;
    case 'sym':
      return n.name;
    case 'const':
      return n.name === 'inf' ? '\\infty' : n.name === 'empty' ? '\\emptyset' : `\\${n.name}`;
    case 'add':
      return n.terms
        .map((t, i) => {
          const s =
            t.sign === 1 ? (i === 0 ? '' : '+') : t.sign === -1 ? '-' : t.sign === 'pm' ? '\\pm ' : '\\mp ';
          return s + wrap(t.x, t.x.k === 'add');
        })
        .join('');
    case 'mul':
      return n.call
        ? n.fs.map((f) => canonicalNode(f)).join('')
        : n.fs.map((f) => wrap(f, f.k === 'add')).join('*');
    case 'div':
      return `${wrap(n.a, n.a.k !== 'num' && n.a.k !== 'sym')}${n.ratio ? ':' : '/'}${wrap(n.b, n.b.k !== 'num' && n.b.k !== 'sym')}`;
    case 'pow':
      return `${wrap(n.b, n.b.k !== 'num' && n.b.k !== 'sym')}^{${canonicalNode(n.e)}}`;
    case 'fn':
      return `${n.name}(${n.args.map(canonicalNode).join(',')})`;
    case 'pct':
      return `${canonicalNode(n.x)}%`;
    case 'text':
      return `\\text{${n.s.trim()}}`;
    case 'tuple':
      return `${n.open}${n.items.map(canonicalNode).join(',')}${n.close}`;
    case 'set':
      return `\\{${n.items.map(canonicalNode).join(',')}\\}`;
    case 'list':
      return n.items.map(canonicalNode).join(',');
    case 'matrix':
      return `\\begin{pmatrix}${n.rows.map((r) => r.map(canonicalNode).join('&')).join('\\\\')}\\end{pmatrix}`;
    case 'rel':
      return n.parts.map((p, i) => (i === 0 ? '' : (n.ops[i - 1] ?? '')) + canonicalNode(p)).join('');
    case 'setop':
      return n.parts
        .map(canonicalNode)
        .join(n.op === 'cup' ? '\\cup' : n.op === 'cap' ? '\\cap' : '\\setminus');
  }
}

function wrap(n: Node, paren: boolean): string {
  const s = canonicalNode(n);
  return paren ? `(${s})` : s;
}
