import { describe, expect, it } from 'vitest';
import { answerFormat, isListAnswer, verify } from '../src/index.js';

/**
 * Issue 23: answers a policy could be paid for although they are wrong. Each case failed (was
 * accepted, or counted as hedging) before the fix named in its test.
 */
describe('loopholes closed (issue 23)', () => {
  // The ten sample points of the old sampler (fixed, six positive, x < 0 at the 7th and 9th).
  const OLD_POINTS = [
    '0.5772',
    '1.4151',
    '2.2361',
    '0.8415',
    '1.7327',
    '2.7191',
    '-0.6937',
    '1.3863',
    '-0.5772',
  ];
  const vanishing = OLD_POINTS.map((p) => `(x ${p.startsWith('-') ? '+' : '-'} ${p.replace('-', '')})`).join(
    '',
  );

  it('sample points are drawn per comparison: a polynomial vanishing on fixed points is not zero', () => {
    expect(verify('x^2', `\\boxed{x^2 + ${vanishing}}`).correct).toBe(false);
    expect(verify('y = x^2', `\\boxed{y = x^2 + ${vanishing}}`).correct).toBe(false);
    // deterministic: the points are seeded from the two expressions
    const again = verify('x^2', `\\boxed{x^2 + ${vanishing}}`);
    expect(again).toEqual(verify('x^2', `\\boxed{x^2 + ${vanishing}}`));
    expect(verify('(x+1)^2', '\\boxed{x^2+2x+1}').correct).toBe(true);
  });

  it.each([
    ['x^2+1', '\\boxed{x^2+1+10^{-12}x}'], // exact: rational points, rational coefficients
    ['x^2+1', '\\boxed{x^2+1+10^{-12}}'],
    ['\\frac{1}{x}', '\\boxed{\\frac{1}{x}+10^{-30}x^3}'],
    ['y = x^2', '\\boxed{y = x^2 + 10^{-12}x}'], // equations compare exactly too
    ['10^{20}', '\\boxed{10^{20}+1}'], // exact values that round to the same double
    ['1', '\\boxed{1+10^{-12}\\pi}'], // floats: the tolerance is the evaluation's own rounding error
    ['x^2+1', '\\boxed{x^2+1+10^{-12}\\ln x}'],
    ['\\sin x', '\\boxed{\\sin x + 10^{-13}\\cos x}'],
  ])('a tiny extra term does not meet the tolerance: gold %j, %j', (gold, response) => {
    expect(verify(gold, response)).toMatchObject({ correct: false, reason: 'not-equal' });
  });

  it.each([
    ['7', '\\boxed{3 + \\arccos(\\cos 0)}'],
    ['7', '\\boxed{7 + \\arcsin(\\sin\\frac{\\pi}{2})}'],
    ['1000', '\\boxed{7 + \\tan(\\frac{\\pi}{2} - 10^{-15}) - \\tan(\\frac{\\pi}{2} - 10^{-15})}'],
    ['x', '\\boxed{x + 5 + \\tan(\\frac{\\pi}{2} - 10^{-15}) - \\tan(\\frac{\\pi}{2} - 10^{-15})}'],
  ])('an unbounded error bound decides nothing: gold %j, %j', (gold, response) => {
    expect(verify(gold, response).correct).toBe(false);
  });

  it.each([
    ['1', '\\boxed{\\sin^2 x + \\cos^2 x}'],
    ['\\tan^2 y + 1', '\\boxed{\\sec^2 y}'],
    ['\\frac{\\sqrt{3}}{2}', '\\boxed{\\sin\\frac{\\pi}{3}}'],
    ['e^{2x}', '\\boxed{(e^x)^2}'],
    ['\\frac{\\pi}{4}', '\\boxed{\\arctan 1}'],
    ['\\ln 6', '\\boxed{\\ln 2 + \\ln 3}'],
    ['\\frac{x^2-1}{x-1}', '\\boxed{x+1}'],
  ])('true identities in floating point still hold: gold %j, %j', (gold, response) => {
    expect(verify(gold, response).correct).toBe(true);
  });

  it.each([
    ['2\\ln x', '\\boxed{\\ln(x^2)}'],
    ['\\ln(x^2)', '\\boxed{2\\ln x}'],
    ['x', '\\boxed{(\\sqrt{x})^2}'],
    ['y = 2\\ln x', '\\boxed{y = \\ln(x^2)}'],
  ])('a point where only one side is defined is a disagreement: gold %j, %j', (gold, response) => {
    expect(verify(gold, response).correct).toBe(false);
  });

  it('undefined on both sides at the same points is not a disagreement', () => {
    expect(verify('\\frac{\\sqrt{x}}{x}', '\\boxed{\\frac{1}{\\sqrt{x}}}').correct).toBe(true);
    expect(verify('\\ln(x^2)', '\\boxed{2\\ln|x|}').correct).toBe(true);
  });

  it.each([
    ['5', '\\boxed{5.0000001}', false],
    ['5', '\\boxed{4.9999999}', false],
    ['-5', '\\boxed{-5.0000001}', false],
    ['5', '\\boxed{5.0}', true],
    ['5', '\\boxed{5.000}', true],
    ['1000', '\\boxed{1,000.00}', true],
    ['2.5', '\\boxed{2.5000001}', true], // a decimal gold keeps Math-Verify's rounding to 6 places
  ])(
    'an integer gold accepts only an exactly integer-valued answer: gold %j, %j → %s',
    (gold, response, want) => {
      expect(verify(gold, response).correct).toBe(want);
    },
  );

  it('answerFormat counts distinct final answers: a repeat of the same answer is one', () => {
    expect(answerFormat('\\boxed{3} so again \\boxed{3}')).toMatchObject({
      boxes: 2,
      distinct: 1,
      kind: 'one',
    });
    expect(answerFormat('\\boxed{\\frac12}, i.e. \\boxed{1/2}')).toMatchObject({ distinct: 1, kind: 'one' });
    expect(answerFormat('I think \\boxed{2}. Hmm, no: \\boxed{3}.')).toMatchObject({
      distinct: 2,
      kind: 'many',
    });
    expect(answerFormat('\\boxed{3} and <answer>4</answer>')).toMatchObject({ distinct: 2, kind: 'many' });
    expect(answerFormat('no answer')).toMatchObject({ distinct: 0, kind: 'none' });
  });

  it('an identical repeated box is one answer for verify too', () => {
    expect(verify('5', '\\boxed{5}\\boxed{5}').correct).toBe(true);
    expect(verify('5', '\\boxed{5}, \\boxed{5}').correct).toBe(true);
    expect(verify('5', '\\boxed{5}, \\boxed{6}').correct).toBe(false);
  });

  it('isListAnswer tells several values from one', () => {
    expect(isListAnswer('1, 2, 3')).toBe(true);
    expect(isListAnswer('\\{1, 2\\}')).toBe(true);
    expect(isListAnswer('\\pm 2')).toBe(true);
    expect(isListAnswer('3')).toBe(false);
    expect(isListAnswer('1,000')).toBe(false);
    expect(isListAnswer('(1, 2)')).toBe(false); // one point
    expect(isListAnswer('x = 5')).toBe(false);
  });
});
