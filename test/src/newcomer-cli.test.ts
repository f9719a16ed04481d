import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from 'agentrl';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { readJsonl } from './cli.js';

/**
 * What a newcomer meets on the command line, through the real CLI in this process: a training file
 * smaller than one step's prompts, --resume of it, --print-config over an existing run, a missing
 * --model.init, eval of part of a file, a misspelt option, eval's own --help.
 */
const dir = mkdtempSync(join(tmpdir(), 'agentrl-newcomer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = { stdout: '', stderr: '' };
  const spies = (['stdout', 'stderr'] as const).map((s) =>
    vi.spyOn(process[s], 'write').mockImplementation((chunk: string | Uint8Array) => {
      out[s] += String(chunk);
      return true;
    }),
  );
  try {
    return { code: await main(args), ...out };
  } finally {
    for (const s of spies) s.mockRestore();
  }
}

const rows = join(dir, 'rows.jsonl');
writeFileSync(
  rows,
  [
    [3, 4],
    [2, 5],
    [6, 7],
  ]
    .map(([a, b]) => JSON.stringify({ question: `What is ${a} * ${b}?`, answer: String(a! * b!) }))
    .join('\n'),
);
// The smoke preset takes 4 prompts a step; this file has 3 rows.
const small = [
  'train',
  '--preset',
  'smoke',
  '--runsDir',
  dir,
  '--no-progress',
  '--sft.steps',
  '10',
  '--task.kind',
  'files',
  '--task.trainFiles',
  rows,
];

describe('the newcomer path', () => {
  it('trains and resumes on a file with fewer rows than rl.promptsPerStep, saying so', async () => {
    const first = await cli([...small, '--name', 'small', '--stop-after', '1']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/3 problems to draw from, fewer than rl\.promptsPerStep \(4\)/);
    // 3 rows hold out none (a fifth, rounded down): the evaluations say so instead of printing 0.0 %.
    expect(first.stdout + first.stderr).toMatch(/eval @ step 0: skipped, no held-out problems/);
    expect(readJsonl(join(dir, 'small', 'metrics.jsonl')).filter((m) => m.phase === 'eval')).toEqual([]);
    const resumed = await cli(['train', '--resume', join(dir, 'small'), '--no-progress']);
    expect(resumed.code, resumed.stderr).toBe(0);
    const rl = readJsonl(join(dir, 'small', 'metrics.jsonl')).filter((m) => m.phase === 'rl');
    expect(rl.map((m) => m.step)).toEqual([1, 2, 3, 4]);
    // Steps RoC left nothing to train on record that no update ran, not a learning rate of 0.
    for (const m of rl) {
      expect([0, 1]).toContain(m.updated);
      if (m.updated === 0) {
        expect(m).not.toHaveProperty('lr');
        expect(m).not.toHaveProperty('gradNorm');
      } else expect(m.lr).toBeGreaterThan(0);
    }
  });

  it('--print-config works when the run directory exists, and leaves the run alone', async () => {
    const before = readFileSync(join(dir, 'small', 'metrics.jsonl'), 'utf8');
    const r = await cli([...small, '--name', 'small', '--print-config']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ name: 'small', task: { trainFiles: [rows] } });
    const resumed = await cli(['train', '--resume', join(dir, 'small'), '--print-config']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readFileSync(join(dir, 'small', 'metrics.jsonl'), 'utf8')).toBe(before);
  });

  it('names a missing --model.init directory', async () => {
    const r = await cli([...small, '--name', 'noinit', '--model.init', '/no/such/dir']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'agentrl: model: /no/such/dir (model.init) does not exist; point model.init at a checkpoint directory (config.json + model.safetensors, as runs/<name>/checkpoints/<tag> or a Hugging Face download)\n',
    );
  });

  it('eval --data honours --eval.problems', async () => {
    const out = join(dir, 'eval.json');
    const some = await cli([
      'eval',
      '--checkpoint',
      join(dir, 'small'),
      '--data',
      rows,
      '--eval.problems',
      '2',
      '--k',
      '1',
      '--out',
      out,
    ]);
    expect(some.code, some.stderr).toBe(0);
    expect(some.stderr).toMatch(/the first 2 of 3 problems/);
    expect(JSON.parse(readFileSync(out, 'utf8'))).toMatchObject({ problems: 2, k: 1 });
    const all = await cli([
      'eval',
      '--checkpoint',
      join(dir, 'small'),
      '--data',
      rows,
      '--k',
      '1',
      '--out',
      out,
    ]);
    expect(all.code, all.stderr).toBe(0);
    expect(JSON.parse(readFileSync(out, 'utf8'))).toMatchObject({ problems: 3 });
    const none = await cli(['eval', '--checkpoint', join(dir, 'small')]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/eval: no held-out problems: .*agentrl eval --data FILE/);
    const missing = await cli(['eval', '--checkpoint', join(dir, 'nope'), '--data', rows]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/nope \(--checkpoint\) does not exist/);
  });

  it('suggests the option meant, blames the flag that gave a wrong value, and eval --help lists eval', async () => {
    const typo = await cli([...small, '--rl.promptsPerstep', '2']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/unknown option --rl\.promptsPerstep; did you mean --rl\.promptsPerStep\?/);
    const wrong = await cli([...small, '--name', 'w', '--rl.clipHigh', '-1']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/rl\.clipHigh: .*\(set by --rl\.clipHigh\)/);
    const help = await cli(['eval', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--eval.problems');
    expect(help.stdout).not.toMatch(/--sft\.|--rl\.stages|--rl\.lr /);
  });
});
