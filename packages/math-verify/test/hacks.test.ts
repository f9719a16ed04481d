import { describe, expect, it } from 'vitest';
import { verify } from '../src/index.js';

/** A wrong "yes" is a reward hack: these must all be false. */
describe('anti-reward-hack asymmetries', () => {
  it.each([
    ['2', '\\boxed{1, 2, 3}', 'a list of candidates for one answer'],
    ['2', '\\boxed{2} or \\boxed{3}', 'two boxed candidates joined by "or"'],
    ['2', '$\\boxed{1}$, $\\boxed{2}$', 'boxes separated by a comma'],
    ['2', '\\boxed{\\{2, 3\\}}', 'a set holding the answer'],
    ['2', '\\boxed{1 \\pm 1}', 'a ± that covers the answer'],
    ['2', '\\boxed{\\pm 2}', 'a ± of the answer'],
    ['x \\in [-2,7]', '\\boxed{-2 \\le x \\le 7}', 'an inequality for an interval gold'],
    ['3', '\\boxed{x}', 'a free variable'],
    ['3', '\\boxed{5 \\approx 3}', 'an approximation after a wrong exact value'],
    ['7 = 11a + c', '\\boxed{11a + c}', 'half of an equation whose left side is not a name'],
    ['\\frac{1}{3}', '\\boxed{0.3}', 'a one-decimal rounding'],
    ['4', '\\boxed{4\\sqrt{2}}', 'a dropped factor'],
    ['f(x)', '\\boxed{f(y)}', 'a renamed variable (strict)'],
    ['(1,3)', '\\boxed{(3,1)}', 'a reordered tuple'],
    ['|x|', '\\boxed{x}', 'an identity that holds only for positive x'],
    ['\\sqrt{x^2}', '\\boxed{x}', 'the same, through a root'],
    ['2', '\\boxed{\\frac{0}{0}}', 'an undefined value'],
    ['0', '\\boxed{\\ge 0}', 'a relation sign where a value should be'],
  ])('gold %j, response %j (%s) is false', (gold, response) => {
    expect(verify(gold, response).correct).toBe(false);
  });

  it('still accepts the converse directions that Math-Verify accepts', () => {
    expect(verify('-2 \\le x \\le 7', '\\boxed{x \\in [-2,7]}').correct).toBe(true);
    expect(verify('x \\in [-2,7]', '\\boxed{-2 \\le x \\le 7}', { allowSetRelation: true }).correct).toBe(
      true,
    );
    expect(verify('\\{1, 2\\}', '\\boxed{2} and \\boxed{1}').correct).toBe(true);
  });

  it('takes the last answer, not an earlier box', () => {
    expect(verify('3', 'First \\boxed{2}. Wait, that is wrong; the answer is \\boxed{3}.').correct).toBe(
      true,
    );
    expect(verify('2', 'First \\boxed{2}. Wait, that is wrong; the answer is \\boxed{3}.').correct).toBe(
      false,
    );
  });
});
