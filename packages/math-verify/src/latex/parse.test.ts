import { describe, expect, it } from 'vitest';
import { Deadline } from '../deadline.js';
import { parseLatex } from './parse.js';
import { canonicalNode } from './serialize.js';
import { ParseFailure } from './tokenize.js';

const parse = (s: string) => canonicalNode(parseLatex(s, new Deadline(1_000)));

describe('parseLatex', () => {
  it.each([
    ['\\frac12', '1/2'],
    ['\\frac3{3}', '3/3'],
    ['\\sqrt2x', 'sqrt(2)*x'],
    ['x^23', 'x^{2}*3'],
    ['\\sin^2 x', '(sin(x))^{2}'],
    ['\\sin b \\cos a', 'sin(b)*cos(a)'],
    ['\\sin^{-1}(x)', 'arcsin(x)'],
    ['204_5', '54'],
    ['a_{37}', 'a_37'],
    ['f(x)', 'fx'],
    ['(1, 2]', '(1,2]'],
    ['\\{1, 2\\}', '\\{1,2\\}'],
    ['[0,1) \\cup (2, \\infty)', '[0,1)\\cup(2,\\infty)'],
    ['\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}', '\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}'],
    ['1 \\pm \\sqrt{5}', '1\\pm sqrt(5)'],
    ['x \\le 3', 'x<=3'],
    ['5 \\text{ cm}', '5'],
    ['\\text{Evelyn}', '\\text{Evelyn}'],
    ['25\\%', '25%'],
    ['3 \\text{ and } 4', '3,4'],
    ['\\log_2 8', 'logb(8,2)'],
    ['|x-1|', 'abs(x-1)'],
    ['\\quadx', 'x'],
    ['p=5,q=2;p=7,q=2', '(5,2),(7,2)'],
    ['x=1; y', 'x=1,y'],
  ])('%j → %j', (input, output) => {
    expect(parse(input)).toBe(output);
  });

  it.each(['\\frac{1}{', '(1, 2', '\\sum_{k=1}^{n} k', '1 +', '\\begin{pmatrix}1'])('rejects %j', (input) => {
    expect(() => parseLatex(input, new Deadline(1_000))).toThrow(ParseFailure);
  });

  it('refuses nesting past the depth limit instead of overflowing the stack', () => {
    expect(() => parseLatex(`${'('.repeat(200)}1${')'.repeat(200)}`, new Deadline(1_000))).toThrow(/deep/);
  });
});
