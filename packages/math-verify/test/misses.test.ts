import { describe, expect, it } from 'vitest';
import { verify } from '../src/index.js';

const ok = (gold: string, response: string) => verify(gold, response, { timeoutMs: 1_000 });

/** Right answers that used to score 0 (issue 14, item 4). */
describe('answers that must be found', () => {
  it.each([
    ['\\$10,\\!000', '\\boxed{10000}'],
    ['\\$1,\\!234.50', 'The total is \\boxed{1234.5}.'],
    ['\\$18{,}000', '\\boxed{18000}'],
    ['10000', 'The total is \\$10,\\!000.'],
    ['It costs \\$5 per item', '\\boxed{5}'],
  ])('a dollar gold with thousands separators: %j accepts %j', (gold, response) => {
    expect(ok(gold, response)).toMatchObject({ correct: true });
  });

  it.each([
    ['7', 'The answer is **7**.'],
    ['7', 'Final answer: **7**'],
    ['7', 'The answer is `7`.'],
    ['7', 'so we get *7*'],
    ['6', '答案：**6**'],
  ])('markdown emphasis: %j in %j', (gold, response) => {
    expect(ok(gold, response)).toMatchObject({ correct: true, extracted: gold });
  });

  it.each([
    ['55', '\\boxed{\\sum_{k=1}^{10} k = 55}'],
    ['55', 'so $\\sum_{k=1}^{10} k = 55$.'],
    ['\\frac12', 'Hence $\\int_0^1 x\\,dx = \\frac{1}{2}$'],
    ['3', '\\boxed{\\lim_{x \\to 0} \\frac{\\sin 3x}{x} = 3}'],
    ['30', '\\boxed{\\angle ABC = 30^\\circ}'],
  ])(
    'an equation whose left side we cannot read: gold %j, %j takes the right-hand side',
    (gold, response) => {
      expect(ok(gold, response)).toMatchObject({ correct: true });
    },
  );

  it.each([
    ['7', '答案是7。'],
    ['7', '所以答案为7个苹果'],
    ['7', '答案：7'],
    ['12', '共有12人'],
  ])('a number touching CJK text: %j in %j', (gold, response) => {
    expect(ok(gold, response)).toMatchObject({ correct: true, extracted: gold });
  });

  it.each([
    ['\\sqrt{2}', 'The answer is √2'],
    ['2\\sqrt{3}', 'answer: 2√3'],
    ['\\frac{\\sqrt{3}}{2}', 'answer: √3/2'],
    ['2\\sqrt{3}', '所以答案是2√3。'],
  ])('an unboxed √: %j in %j', (gold, response) => {
    expect(ok(gold, response)).toMatchObject({ correct: true });
  });

  it('a \\boxed{} answer followed by more than 24,000 characters', () => {
    const pad = ' and then we double-check the arithmetic'.repeat(700); // 28,000 characters
    expect(ok('7', `So \\boxed{7}.${pad}`)).toMatchObject({ correct: true, extracted: '7' });
    // the box still outranks a prose "answer" in the tail, as Math-Verify's priorities do
    expect(ok('7', `So \\boxed{7}.${pad} the answer is 9`)).toMatchObject({ correct: true });
    // a box across the edge of the scanned tail
    expect(ok('7', `ab\\boxed{7}${'x'.repeat(23_995)}`)).toMatchObject({ correct: true });
    // an unterminated box far back is no answer
    expect(ok('7', `\\boxed{7${pad}`)).toMatchObject({ correct: false, reason: 'no-answer' });
  });
});

describe('what the new readings must not accept', () => {
  it.each([
    ['2', 'AZYUK2A', 'a digit inside a Latin word'],
    ['3', 'x*3', 'a factor after an operator'],
    ['5', '\\boxed{x+2=5}', 'an equation we can read, whose left side is not a name'],
    ['11a+c', '\\boxed{7 = 11a + c}', 'the same with the unknowns on the right'],
    ['2', '\\boxed{\\sum_{k=1}^{10} k = 55}', 'the right-hand side is still compared'],
    ['a=1', '\\boxed{\\int f = 1, 2}', 'no right-hand side out of a list'],
  ])('gold %j, response %j (%s) is false', (gold, response) => {
    expect(ok(gold, response).correct).toBe(false);
  });
});
