import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../config/load.js';
import { TrainerError } from '../errors.js';
import { loadSplit } from '../task/load-split.js';
import { loadDatasetFiles } from './dataset.js';
import { stripDapoInstruction } from './rows.js';

const tmp = mkdtempSync(join(tmpdir(), 'agentrl-data-'));

describe('dataset files', () => {
  it('reads verl-layout and question/answer jsonl rows, skipping and counting rows without an answer', async () => {
    const file = join(tmp, 'rows.jsonl');
    const rows = [
      {
        data_source: 'x',
        prompt: [
          { role: 'system', content: 's' },
          { role: 'user', content: 'What is 2+2?' },
        ],
        reward_model: { style: 'rule', ground_truth: '4' },
      },
      { question: 'What is 3*3?', answer: 9 },
      { question: 'no answer here' },
      { prompt: 'Solve x+1=3', reward_model: { ground_truth: '' } },
    ];
    writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n{broken\n');
    const got = await loadDatasetFiles([file]);
    expect(got.problems.map((p) => [p.question, p.answer])).toEqual([
      ['What is 2+2?', '4'],
      ['What is 3*3?', '9'],
    ]);
    expect(got.skipped.map((s) => s.row)).toEqual([2, 3, 4]);
    expect(got.skipped[0]!.reason).toMatch(/no answer/);
    expect(got.skipped[2]!.reason).toMatch(/not JSON/);
  });

  it('reads parquet', async () => {
    const file = join(tmp, 'rows.parquet');
    const buf = parquetWriteBuffer({
      columnData: [
        { name: 'question', data: ['What is 6*7?', 'What is 1+1?', 'Empty'] },
        { name: 'answer', data: ['42', '2', null] },
      ],
    });
    writeFileSync(file, Buffer.from(buf));
    const got = await loadDatasetFiles([file]);
    expect(got.problems.map((p) => p.answer)).toEqual(['42', '2']);
    expect(got.skipped).toHaveLength(1);
  });

  it('stops with a message when nothing is usable or the file is missing', async () => {
    const file = join(tmp, 'empty.jsonl');
    writeFileSync(file, JSON.stringify({ question: 'q' }) + '\n');
    await expect(loadDatasetFiles([file])).rejects.toThrow(/no usable rows.*reward_model.ground_truth/);
    await expect(loadDatasetFiles([join(tmp, 'nope.jsonl')])).rejects.toBeInstanceOf(TrainerError);
  });

  const DAPO = (problem: string) =>
    'Solve the following math problem step by step. The last line of your response should be of the form Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n' +
    `${problem}\n\nRemember to put your answer on its own line after "Answer:".`;

  it('reads rStar/verl rows (chat prompt, reward_model, data_source), DAPO prompts and GSM8K answers', async () => {
    const file = join(tmp, 'mixed.jsonl');
    const rows = [
      {
        data_source: 'aime24',
        prompt: [{ role: 'user', content: 'Find $m+n$.' }],
        ability: 'math',
        reward_model: { style: 'rule', ground_truth: '113' },
        extra_info: { index: 1, id: 61 },
      },
      {
        data_source: 'rstar_open-r1/DAPO-Math-17k-Processed',
        prompt: [{ role: 'user', content: DAPO('How many primes are below 10?') }],
        reward_model: { ground_truth: '4' },
      },
      { question: 'Janet has 3 ducks and buys 2. How many?', answer: 'She has 3+2=5.\n#### 5' },
      { problem: 'What is 7*8?', extra_info: { answer: '56' } },
    ];
    writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n'));
    const got = await loadDatasetFiles([file]);
    expect(got.problems.map((p) => [p.question, p.answer, p.dataSource])).toEqual([
      ['Find $m+n$.', '113', 'aime24'],
      ['How many primes are below 10?', '4', 'rstar_open-r1/DAPO-Math-17k-Processed'],
      ['Janet has 3 ducks and buys 2. How many?', '5', undefined],
      ['What is 7*8?', '56', undefined],
    ]);
    expect(new Set(got.problems.map((p) => p.id)).size).toBe(4);
    expect(stripDapoInstruction('plain problem')).toBe('plain problem');
  });

  it('drops repeated prompts (normalised), counting those whose answer differs', async () => {
    const a = join(tmp, 'dup-a.jsonl');
    const b = join(tmp, 'dup-b.jsonl');
    writeFileSync(
      a,
      [
        { id: 'x', question: 'What is  2+2?', answer: '4' },
        { id: 'y', question: 'what is 2+2?', answer: '4' },
        { id: 'z', question: 'What is 3+3?', answer: '6' },
      ]
        .map((r) => JSON.stringify(r))
        .join('\n'),
    );
    writeFileSync(
      b,
      [
        {
          id: 'x',
          prompt: [{ role: 'user', content: DAPO('What is 3+3?') }],
          reward_model: { ground_truth: '7' },
        },
        { id: 'x', question: 'What is 5+5?', answer: '10' },
      ]
        .map((r) => JSON.stringify(r))
        .join('\n'),
    );
    const got = await loadDatasetFiles([a, b]);
    expect(got.problems.map((p) => p.answer)).toEqual(['4', '6', '10']);
    expect(got).toMatchObject({ duplicates: 2, conflicts: 1 });
    expect(new Set(got.problems.map((p) => p.id)).size).toBe(3);
  });

  it('keeps the held-out split disjoint from training by normalised prompt', async () => {
    const train = join(tmp, 'split-train.jsonl');
    const held = join(tmp, 'split-held.jsonl');
    const q = (i: number) => ({ question: `Problem number ${i}?`, answer: String(i) });
    writeFileSync(train, Array.from({ length: 40 }, (_, i) => JSON.stringify(q(i % 30))).join('\n'));
    writeFileSync(
      held,
      [{ question: 'PROBLEM   number 3?', answer: '3' }, q(31)].map((r) => JSON.stringify(r)).join('\n'),
    );
    const lines: string[] = [];
    const withEval = await loadSplit(
      resolveConfig({ overrides: { task: { kind: 'files', trainFiles: [train], evalFiles: [held] } } }),
      (l) => lines.push(l),
    );
    expect(withEval.train).toHaveLength(29);
    expect(withEval.train.some((p) => p.answer === '3')).toBe(false);
    expect(lines.join('\n')).toMatch(/dropped 10 training rows that repeat[\s\S]*left out 1 training rows/);
    const own = await loadSplit(
      resolveConfig({ overrides: { task: { kind: 'files', trainFiles: [train], heldOutSize: 6 } } }),
    );
    expect(own.heldOut).toHaveLength(6);
    const heldKeys = new Set(own.heldOut.map((p) => p.question));
    expect(own.train.filter((p) => heldKeys.has(p.question))).toEqual([]);
    expect(own.train.length + own.heldOut.length).toBe(30);
  });
});
