import { verify } from '@agentrl/math-verify';
import { describe, expect, it } from 'vitest';
import { lastBoxed, markedAnswer, rewardOf } from './reward.js';

const v = (gold: string, response: string) => {
  const r = verify(gold, response);
  return { correct: r.correct, extracted: r.extracted ?? null };
};

describe('reward', () => {
  it('reads the last \\boxed{} with nested braces', () => {
    expect(lastBoxed('a \\boxed{1} b \\boxed{\\frac{1}{2}} c')).toBe('\\frac{1}{2}');
    expect(lastBoxed('no answer')).toBeNull();
    expect(lastBoxed('\\boxed{12')).toBeNull();
  });

  it('pays 1 only for a boxed integer equal to the gold in boxed-integer mode', () => {
    expect(rewardOf('201954', 'x \\boxed{201954}', 'boxed-integer', v).reward).toBe(1);
    expect(rewardOf('201954', '\\boxed{201,954}', 'boxed-integer', v).reward).toBe(1);
    expect(rewardOf('201954', '\\boxed{201955}', 'boxed-integer', v).reward).toBe(0);
    // the hack plain GRPO found: restate the expression and let the verifier compute it
    expect(rewardOf('201954', '\\boxed{347 * 582}', 'boxed-integer', v).reward).toBe(0);
    const unterminated = '<tool_call>{"name":"python","arguments":{"code":"print(347 * 582"}}}}}}';
    expect(rewardOf('201954', unterminated, 'boxed-integer', v).reward).toBe(0);
    expect(rewardOf('201954', unterminated, 'boxed', v).reward).toBe(0);
  });

  it('boxed mode verifies the boxed expression mathematically', () => {
    expect(rewardOf('1/2', '\\boxed{\\frac{2}{4}}', 'boxed', v).reward).toBe(1);
    expect(rewardOf('1/2', 'the answer is 0.5', 'boxed', v).reward).toBe(0);
    expect(rewardOf('1/2', 'the answer is 0.5', 'any', v).reward).toBe(1);
  });

  it('rstar mode reads DAPO "Answer:" lines and boxed answers, then math-verify on the whole response', () => {
    expect(markedAnswer('work...\nAnswer: 204')).toBe('204');
    expect(markedAnswer('so the answer is $\\frac{3}{4}$.')).toBe('\\frac{3}{4}');
    expect(markedAnswer('Answer: \\boxed{113} as shown')).toBe('113');
    expect(markedAnswer('no marker at all')).toBeNull();
    expect(rewardOf('204', 'Steps.\nAnswer: 204', 'rstar', v)).toEqual({ reward: 1, answer: '204' });
    expect(rewardOf('204', 'Steps.\nAnswer: 204', 'boxed', v).reward).toBe(0);
    expect(rewardOf('113', 'thus \\boxed{113}', 'rstar', v).reward).toBe(1);
    expect(rewardOf('1/2', 'we get x = 0.5 in the end', 'rstar', v).reward).toBe(1);
    expect(rewardOf('204', 'Answer: 205', 'rstar', v).reward).toBe(0);
  });

  it('refuses several different final answers, even when the last one is right (issue 23)', () => {
    const hedge = 'I think \\boxed{201953}. Hmm, no: \\boxed{201954}.';
    for (const mode of ['boxed-integer', 'boxed', 'rstar', 'any'] as const)
      expect(rewardOf('201954', hedge, mode, v).reward, mode).toBe(0);
    expect(rewardOf('3', 'It is \\boxed{3} or <answer>4</answer>', 'rstar', v).reward).toBe(0);
  });

  it('refuses a prose list where the gold is one value, accepts it where the gold is that list', () => {
    expect(rewardOf('3', 'So the answer is 1, 2, 3.', 'rstar', v).reward).toBe(0);
    expect(rewardOf('3', 'The answers are 1, 2, 3', 'rstar', v).reward).toBe(0);
    expect(rewardOf('1, 2, 3', 'So the answer is 1, 2, 3.', 'rstar', v).reward).toBe(1);
  });

  it('does not penalise the same answer repeated', () => {
    const twice = 'so \\boxed{201954}.\n\nFinal answer: \\boxed{201954}';
    for (const mode of ['boxed-integer', 'boxed', 'rstar', 'any'] as const)
      expect(rewardOf('201954', twice, mode, v), mode).toEqual({ reward: 1, answer: '201954' });
    expect(rewardOf('201954', '\\boxed{201,954} = \\boxed{201954}', 'boxed-integer', v).reward).toBe(1);
    expect(rewardOf('5', '\\boxed{5}\\boxed{5}', 'any', v).reward).toBe(1);
    expect(rewardOf('1/2', '\\boxed{\\frac{1}{2}}, that is \\boxed{0.5}', 'boxed', v).reward).toBe(1);
  });
});
