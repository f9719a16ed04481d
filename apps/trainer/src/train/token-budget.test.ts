import { createCharTokenizer } from '@agentrl/engine';
import { CHATML_TEMPLATE, createChatFormat } from '@agentrl/rollout';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../config/load.js';
import { checkTokenBudget } from './token-budget.js';

const tok = createCharTokenizer();
const chat = createChatFormat({ template: CHATML_TEMPLATE });
const problems = [
  { id: 'short', question: 'What is 1 * 2?', answer: '2' },
  { id: 'long', question: `What is ${'9'.repeat(300)} * 2?`, answer: '1' },
];

describe('token budget check', () => {
  it('names rl.microBatchTokens and the stage maxResponseTokens when a trajectory cannot fit', () => {
    const cfg = resolveConfig({ overrides: { rl: { microBatchTokens: 600 } } });
    expect(() => checkTokenBudget(cfg, problems, tok, chat)).toThrow(
      /prompt of problem long is \d+ tokens.*rl\.stages\[1\]\.maxResponseTokens \(256, stage stage2\).*rl\.microBatchTokens \(600\).*at least \d+/,
    );
    expect(() => checkTokenBudget(cfg, problems.slice(0, 1), tok, chat)).not.toThrow();
    const tiny = resolveConfig({ overrides: { rl: { microBatchTokens: 200 } } });
    expect(() => checkTokenBudget(tiny, problems.slice(0, 1), tok, chat)).toThrow(
      /rl\.microBatchTokens \(200\) must exceed rl\.stages\[1\]\.maxResponseTokens/,
    );
    // the default config fits the tiny task with room to spare
    expect(() => checkTokenBudget(resolveConfig(), problems.slice(0, 1), tok, chat)).not.toThrow();
  });
});
