import { describe, expect, it } from 'vitest';
import { toolCall, trajectory } from '../test/fixtures.js';
import { answerFormatPenalty, countBoxedAnswers, isFailedToolCall, toolErrorRatio } from './penalty.js';

describe('toolErrorRatio', () => {
  it.each([
    [[], 0.5], // no tool call: the reference's neutral 0.5
    [['ok'], 0],
    [['ok', 'runtime_error'], 0.5],
    [['parse_error', 'ok', 'ok', 'ok'], 0.25], // a call that did not parse is an error (the reference misses it)
    [['output_truncated'], 0], // ran fine, output cut: not an error
    [['timeout', 'memory_exceeded', 'sandbox_error', 'tool_error'], 1],
  ] as const)('%j -> %d', (calls, want) => {
    expect(toolErrorRatio(trajectory({ reward: 1, calls: [...calls] }))).toBe(want);
  });

  it('classifies from structure, not from the word "error" in the output', () => {
    const okButSaysError = toolCall('ok');
    okButSaysError.outcome.stdout = 'ValueError: error error';
    expect(isFailedToolCall(okButSaysError)).toBe(false);
    const unparsed = toolCall('ok');
    unparsed.call = null; // no parsed call is a failure whatever the status says
    expect(isFailedToolCall(unparsed)).toBe(true);
  });
});

describe('countBoxedAnswers', () => {
  it.each([
    ['no answer here', 0],
    ['\\boxed{42}', 1],
    ['\\boxed{\\frac{1}{2}}', 1], // nested braces
    ['\\boxed{1} and again \\boxed{1}', 2],
    ['\\boxed{1', 0], // unclosed: a truncated answer does not count
    ['\\boxed{1 \\boxed{2}', 1], // the complete inner one counts
    ['\\boxed 5', 0], // only the braced form is an answer
  ])('%s -> %i', (text, want) => {
    expect(countBoxedAnswers(text)).toBe(want);
  });
});

describe('answerFormatPenalty', () => {
  it.each([
    ['plain text', 1], // missing
    ['\\boxed{1}', 0],
    ['\\boxed{1} \\boxed{1}', 0.5], // (k - 1) / k
    ['\\boxed{1} \\boxed{2} \\boxed{3}', 2 / 3],
  ])('final turn %s -> %d', (answer, want) => {
    expect(answerFormatPenalty(trajectory({ reward: 1, answer }))).toBeCloseTo(want);
  });

  it('reads only the last assistant turn', () => {
    const t = trajectory({ reward: 1, answer: 'thinking' });
    t.turns.splice(1, 0, { role: 'assistant', text: '\\boxed{1}', tokenStart: 2, tokenEnd: 2 });
    expect(answerFormatPenalty(t)).toBe(1);
    t.turns.push({ role: 'user', text: '\\boxed{3}', tokenStart: 4, tokenEnd: 4 });
    expect(answerFormatPenalty(t)).toBe(1);
  });

  it('uses formatPenalty when the scorer set it, and 1 when there is no assistant turn', () => {
    expect(answerFormatPenalty(trajectory({ reward: 1, answer: '\\boxed{1}', formatPenalty: 0.3 }))).toBe(
      0.3,
    );
    const t = trajectory({ reward: 1 });
    t.turns = [];
    expect(answerFormatPenalty(t)).toBe(1);
  });
});
