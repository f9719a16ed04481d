import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { TrainerError } from '../errors.js';
import { loadDatasetFiles } from './dataset.js';

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
});
