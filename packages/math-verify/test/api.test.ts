import { describe, expect, it } from 'vitest';
import { answerFormat, extractAnswer, MathVerifyError, verify, verifyBatch } from '../src/index.js';

describe('public API', () => {
  it('verify returns the extracted answer and a reason', () => {
    expect(verify('\\frac{1}{2}', 'We get $x = 0.5$, so the answer is \\boxed{\\dfrac12}.')).toEqual({
      correct: true,
      extracted: '\\dfrac12',
      reason: 'equal',
    });
    expect(verify('3', 'no idea')).toEqual({ correct: false, extracted: null, reason: 'no-answer' });
    expect(verify('3', '\\boxed{4}')).toEqual({ correct: false, extracted: '4', reason: 'not-equal' });
  });

  it('never throws on values that are not strings', () => {
    expect(verify(undefined as unknown as string, '\\boxed{1}').correct).toBe(false);
    expect(verify('1', null as unknown as string).correct).toBe(false);
  });

  it('a tiny budget gives a timeout verdict, not an exception', () => {
    const r = verify('x^2', `\\boxed{${'x \\cdot '.repeat(100)}x}`, { timeoutMs: 0.001 });
    expect(r).toMatchObject({ correct: false, reason: 'timeout' });
  });

  it('rejects bad options with an actionable error', () => {
    expect(() => verify('1', '1', { timeoutMs: -1 })).toThrow(MathVerifyError);
    expect(() => verify('1', '1', { timeoutMs: -1 })).toThrow(/timeoutMs/);
  });

  it('verifyBatch keeps order', () => {
    const r = verifyBatch([
      { gold: '1', response: '\\boxed{1}' },
      { gold: '2', response: '\\boxed{1}' },
      { gold: '3', response: 'Final Answer: The final answer is $3$. I hope it is correct.' },
    ]);
    expect(r.map((x) => x.correct)).toEqual([true, false, true]);
  });

  it('extractAnswer follows the priority order', () => {
    expect(extractAnswer('We try $x=2$. Final answer: \\boxed{5}. Then $7$.')).toBe('5');
    expect(extractAnswer('The final answer is $12$. I hope it is correct. Later $3$.')).toBe('12');
    expect(extractAnswer('<answer>42</answer>')).toBe('42');
    expect(extractAnswer('Answer: 17 apples, not $3$')).toBe('17');
    expect(extractAnswer('nothing here')).toBeNull();
  });

  it('answerFormat counts final answers for the RoC format penalty', () => {
    expect(answerFormat('no answer')).toEqual({ boxes: 0, tags: 0, distinct: 0, kind: 'none' });
    expect(answerFormat('so \\boxed{3}')).toEqual({ boxes: 1, tags: 0, distinct: 1, kind: 'one' });
    expect(answerFormat('\\boxed{3} or maybe \\boxed{4}')).toEqual({
      boxes: 2,
      tags: 0,
      distinct: 2,
      kind: 'many',
    });
    expect(answerFormat('\\boxed{\\boxed{3}}').boxes).toBe(1);
    expect(answerFormat('<answer>3</answer>').kind).toBe('one');
  });
});
