import { describe, expect, it } from 'vitest';
import { verify } from '../src/index.js';
import { normalizeAnswer } from '../src/latex/normalize.js';

describe('normalizeAnswer', () => {
  it.each([
    ['\\dfrac{1}{2}', '\\frac{1}{2}'],
    ['\\tfrac12', '\\frac12'],
    ['90^\\circ', '90'],
    ['90^{\\circ}', '90'],
    ['90°', '90'],
    ['\\$1,000.99', '1000.99'],
    ['14{,}916', '14916'],
    ['11,\\!111,\\!100', '11111100'],
    ['10,455', '10455'],
    ['(12,102)', '(12,102)'],
    ['28 percent', '28%'],
    ['28 pct', '28%'],
    ['125 miles', '125'],
    ['15 cm^2', '15'],
    ['3\\frac{1}{2}', '(3+\\frac{1}{2})'],
    ['3\\frac12', '(3+\\frac{1}{2})'],
    ['x^3\\frac{1}{2}', 'x^3\\frac{1}{2}'],
    ['infinity', '\\infty'],
    ['1 and 2', '1 , 2'],
    ['(1,2)or(3,4)', '(1,2),(3,4)'],
    ['.5.', '.5'],
    ['\\\\frac{1}{2}', '\\frac{1}{2}'],
    ['a\u0000b', 'a b'],
    ['0.\\overline{3}', '(\\frac{3}{9})'],
    ['1.2\\overline{45}', '(\\frac{1233}{990})'],
  ])('%j → %j', (input, output) => {
    expect(normalizeAnswer(input)).toBe(output);
  });
});

/** The normalisations the issue lists, each as a pair that must verify (and a near miss that must not). */
describe('verify: normalisations', () => {
  it.each([
    ['\\frac{1}{2}', '\\boxed{\\left(\\frac{1}{2}\\right)}'],
    ['\\frac{1}{2}', '\\boxed{\\dfrac{1}{2}}'],
    ['\\frac{1}{2}', '\\boxed{\\tfrac12}'],
    ['2\\sqrt{2}', '\\boxed{2\\sqrt2}'],
    ['\\sqrt{8}', '\\boxed{2\\sqrt2}'],
    ['5', '\\boxed{5\\text{ cm}}'],
    ['5', 'The answer is 5 miles.'],
    ['90', '\\boxed{90^\\circ}'],
    ['100', 'The total is $\\$100$.'],
    ['1000000', '\\boxed{1,000,000}'],
    ['1000000', '\\boxed{1{,}000{,}000}'],
    ['25\\%', '\\boxed{25}'],
    ['0.25', '\\boxed{25\\%}'],
    ['3', '\\boxed{x = 3}'],
    ['0.5', '\\boxed{.5}'],
    ['0.5', '\\boxed{0.50}'],
    ['7/2', '\\boxed{3\\frac12}'],
    ['\\infty', '\\boxed{\\infty}'],
    ['(-\\infty, 2)', '\\boxed{(-\\infty, 2)}'],
    ['3', '\\boxed{\\text{3}}'],
    ['\\text{(B)}', '\\boxed{B}'],
    ['-3', '\\boxed{−3}'],
    ['2^{100}', '\\boxed{1267650600228229401496703205376}'],
    ['\\log_2 8', '\\boxed{3}'],
    ['\\binom{5}{2}', '\\boxed{10}'],
    ['5!', '\\boxed{120}'],
    ['\\frac{\\sqrt{3}}{2}', '\\boxed{0.866025}'],
    ['\\frac{1}{3}', '\\boxed{0.333333}'],
    ['x^2+2x+1', '\\boxed{(x+1)^2}'],
    ['\\sin^2 x + \\cos^2 x', '\\boxed{1}'],
    ['\\{1,2\\}', '\\boxed{\\{2,1\\}}'],
    ['y = 2x + 1', '\\boxed{2x - y + 1 = 0}'],
    ['x > 2', '\\boxed{-x < -2}'],
    ['\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}', '\\boxed{\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}}'],
    ['5', '<answer>5</answer>'],
    ['1', 'I think it is $\\frac{2}{2}$.'],
    ['0.\\overline{3}', '\\boxed{\\frac13}'],
    ['-2,1', '\\boxed{1, -2}'],
    ['1,22', '\\boxed{1.22}'],
    ['\\{-2, 2\\}', '\\boxed{\\pm 2}'],
    ['\\pm 2', '\\boxed{-2, 2}'],
    ['11\\frac{1}{4}', '\\boxed{\\frac{45}{4}}'],
    ['(-\\infty,-2)\\cup(3,\\infty)', '\\boxed{(3,\\infty)\\cup(-\\infty,-2)}'],
    ['(2, -1)', '\\boxed{(x, y) = (2, -1)}'],
    ['\\sqrt[3]{2}', '\\boxed{2^{1/3}}'],
    ['x^2 + 7x + 10', '\\boxed{(x+2)(x+5)}'],
    ['C', 'The answer is \\boxed{\\text{(C)}}'],
    ['3 \\times 10^{5}', '\\boxed{300000}'],
  ])('%j accepts %j', (gold, response) => {
    expect(verify(gold, response, { timeoutMs: 1_000 })).toMatchObject({ correct: true });
  });

  it.each([
    ['\\frac{1}{2}', '\\boxed{\\frac{1}{3}}'],
    ['2\\sqrt{2}', '\\boxed{2\\sqrt3}'],
    ['0.5', '\\boxed{.55}'],
    ['7/2', '\\boxed{3\\frac13}'],
    ['\\frac{1}{3}', '\\boxed{0.3}'],
    ['\\frac{1}{3}', '\\boxed{0.333}'], // 6 places by default, as Math-Verify
    ['\\frac{\\sqrt{3}}{2}', '\\boxed{0.866}'],
    ['x^2+2x+1', '\\boxed{(x-1)^2}'],
    ['90', '\\boxed{\\frac{\\pi}{2}}'],
    ['x > 2', '\\boxed{x \\ge 2}'],
    ['[1,2]', '\\boxed{[1,2)}'],
    ['(1,2)', '\\boxed{(2,1)}'],
    ['10^{10^{10}}', '\\boxed{10^{10^{10}}+1}'],
    ['-2,1', '\\boxed{-2}'],
    ['1,000', '\\boxed{1, 0}'],
  ])('%j rejects %j', (gold, response) => {
    expect(verify(gold, response, { timeoutMs: 1_000 })).toMatchObject({ correct: false });
  });
});
