import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main, withoutTiming } from 'agentrl';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { REPO, readJsonl, runCli, startCli, TEST_DIR, waitFor } from './cli.js';

/**
 * The full loop on the smallest config (the `smoke` preset): SFT, evaluation, two RL stages with the
 * real native engine, the real embedded executor and the real verifier; checkpoints; resume after
 * an interruption reproduces the uninterrupted run's metrics; eval from the checkpoint.
 */
const runs = mkdtempSync(join(tmpdir(), 'agentrl-smoke-'));
afterAll(() => rmSync(runs, { recursive: true, force: true }));

const RL_KEYS = [
  'reward',
  'accuracy',
  'posToolErrorBefore',
  'posToolErrorAfter',
  'responseLength',
  'toolCallsPerTrajectory',
  'tokensPerSec',
  'timeGenerate',
  'timeTool',
  'timeTrain',
];
/** Figures of the policy update: absent from a step RoC left nothing to train on (updated: 0). */
const UPDATE_KEYS = ['lr', 'loss', 'clipFracLow', 'clipFracHigh', 'approxKl', 'gradNorm'];
const common = ['train', '--preset', 'smoke', '--runsDir', runs, '--no-progress'];

/** Runs the CLI in this process and captures what it writes to stderr. */
async function cli(args: string[]): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  try {
    return { code: await main(args), stderr };
  } finally {
    spy.mockRestore();
  }
}

/** Whether the CLI starts as a separate `node` process (needed for the kill -9 test). */
const childProbe = spawnSync(
  process.execPath,
  ['--conditions=@agentrl/source', '--import', 'tsx', join(REPO, 'apps/trainer/src/bin.ts'), '--help'],
  { cwd: TEST_DIR, encoding: 'utf8' },
);
const childError =
  childProbe.status === 0
    ? null
    : (childProbe.stderr.split('\n').find((l) => /Error/.test(l)) ?? 'exit ' + childProbe.status);

describe('agentrl train --preset smoke', () => {
  it('runs SFT then GRPO-RoC, writes checkpoints, metrics and the report; eval reads the checkpoint', async () => {
    const r = await cli([...common, '--name', 'full']);
    expect(r.code, r.stderr).toBe(0);
    const dir = join(runs, 'full');
    const metrics = readJsonl(join(dir, 'metrics.jsonl'));
    const sft = metrics.filter((m) => m.phase === 'sft');
    const rl = metrics.filter((m) => m.phase === 'rl');
    const evals = metrics.filter((m) => m.phase === 'eval');
    expect(sft.map((m) => m.step)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
    for (const m of sft) expect(Number.isFinite(m.loss)).toBe(true);
    expect(sft.at(-1)!.loss).toBeLessThan(sft[0]!.loss as number);
    expect(rl.map((m) => m.step)).toEqual([1, 2, 3, 4]);
    expect(rl.map((m) => m.stage)).toEqual(['stage1', 'stage1', 'stage2', 'stage2']);
    expect(rl.map((m) => m.maxResponseTokens)).toEqual([96, 96, 128, 128]);
    for (const m of rl) {
      for (const k of RL_KEYS) expect(Number.isFinite(m[k]), `${k} of step ${m.step}`).toBe(true);
      expect(m.updated).toBe((m.groupsKept as number) > 0 ? 1 : 0);
      for (const k of UPDATE_KEYS)
        expect(Number.isFinite(m[k]), `${k} of step ${m.step}`).toBe(m.updated === 1);
    }
    for (const m of rl) if (m.updated) expect(m.gradNorm).toBeGreaterThanOrEqual(0);
    // The RL steps train on something: correct answers, groups with mixed rewards (nonzero
    // advantages), a loss with a gradient, and weights that moved away from the SFT checkpoint.
    const trained = rl.filter((m) => (m.groupsKept as number) > 0);
    expect(trained.length, 'RL steps with a nonzero-advantage group').toBeGreaterThanOrEqual(2);
    for (const m of trained) {
      expect(m.reward).toBeGreaterThan(0);
      expect(m.gradNorm).toBeGreaterThan(0);
      expect(m.loss).not.toBe(0);
      expect(m.trainTokens).toBeGreaterThan(0);
    }
    const weights = (tag: string) => readFileSync(join(dir, 'checkpoints', tag, 'model.safetensors'));
    expect(weights('step-000004').equals(weights('step-000000')), 'RL changed the weights').toBe(false);
    expect(evals.map((m) => m.step)).toEqual([0, 4]);
    for (const e of evals) expect(e.accuracy).toBeGreaterThanOrEqual(0);

    const ckpt = join(dir, 'checkpoints', 'step-000004');
    expect(readFileSync(join(dir, 'checkpoints', 'latest'), 'utf8').trim()).toBe('step-000004');
    for (const f of ['model.safetensors', 'config.json', 'optimizer.safetensors', 'trainer-state.json']) {
      expect(existsSync(join(ckpt, f)), f).toBe(true);
    }
    expect(existsSync(join(dir, 'checkpoints', 'step-000002', 'model.safetensors'))).toBe(true);
    const hf = JSON.parse(readFileSync(join(ckpt, 'config.json'), 'utf8'));
    expect(hf.architectures).toEqual(['Qwen3ForCausalLM']);
    const st = readFileSync(join(ckpt, 'model.safetensors'));
    const headerLen = Number(st.readBigUInt64LE(0));
    expect(JSON.parse(st.subarray(8, 8 + headerLen).toString('utf8'))).toHaveProperty([
      'model.embed_tokens.weight',
    ]);
    const report = readFileSync(join(dir, 'report.html'), 'utf8');
    expect(report).toMatch(/<svg /);
    expect(report).not.toMatch(/<script/);

    const data = join(runs, 'rows.jsonl');
    writeFileSync(
      data,
      [
        JSON.stringify({
          prompt: [{ role: 'user', content: 'What is 123 * 456?' }],
          reward_model: { ground_truth: '56088' },
        }),
        JSON.stringify({ question: 'What is 12 * 34?' }),
        JSON.stringify({ question: 'What is 111 * 222?', answer: '24642' }),
      ].join('\n'),
    );
    const out = join(runs, 'eval.json');
    const ev = await cli(['eval', '--checkpoint', dir, '--data', data, '--k', '2', '--out', out]);
    expect(ev.code, ev.stderr).toBe(0);
    expect(ev.stderr).toMatch(/skipped 1 rows/);
    const result = JSON.parse(readFileSync(out, 'utf8'));
    expect(result).toMatchObject({ problems: 2, k: 2, skipped: 1 });
    expect(result.accuracy).toBeGreaterThanOrEqual(0);
  });

  it('a second run with the same seed (and another thread count) writes the same metrics.jsonl', async () => {
    const r = await cli([...common, '--name', 'twin', '--threads', '1']);
    expect(r.code, r.stderr).toBe(0);
    const a = readJsonl(join(runs, 'full', 'metrics.jsonl')).map(withoutTiming);
    const b = readJsonl(join(runs, 'twin', 'metrics.jsonl')).map(withoutTiming);
    expect(b).toEqual(a);
    expect(
      readFileSync(join(runs, 'twin', 'checkpoints', 'step-000004', 'model.safetensors')).equals(
        readFileSync(join(runs, 'full', 'checkpoints', 'step-000004', 'model.safetensors')),
      ),
    ).toBe(true);
  });

  it('--resume after an interruption reproduces the metrics of the uninterrupted run', async () => {
    const dir = join(runs, 'stopped');
    expect((await cli([...common, '--name', 'stopped', '--stop-after', '3'])).code).toBe(0);
    const resumed = await cli(['train', '--resume', dir, '--no-progress']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/resuming .* at RL step 2/);
    const a = readJsonl(join(runs, 'full', 'metrics.jsonl')).map(withoutTiming);
    const b = readJsonl(join(dir, 'metrics.jsonl')).map(withoutTiming);
    expect(b).toEqual(a);
    // One page with both runs overlaid (what the ablation report uses).
    const page = join(runs, 'both.html');
    expect((await cli(['report', join(runs, 'full'), dir, '--out', page])).code).toBe(0);
    expect(readFileSync(page, 'utf8')).toMatch(/full vs stopped[\s\S]*stroke-dasharray/);
  });

  it.skipIf(childError !== null)(
    `after kill -9 of the CLI process, --resume reproduces the uninterrupted run${childError ? ` (skipped: the CLI does not start under plain Node: ${childError})` : ''}`,
    async () => {
      const dir = join(runs, 'killed');
      const child = startCli([...common, '--name', 'killed']);
      // Kill during step 3 or later: after the step-2 checkpoint, before the end.
      await waitFor(
        () => readJsonl(join(dir, 'metrics.jsonl')).some((m) => m.phase === 'rl' && (m.step as number) >= 3),
        150_000,
        'RL step 3',
      );
      child.kill('SIGKILL');
      expect((await child.result).signal).toBe('SIGKILL');
      // The kill landed mid-run: the final evaluation (after step 4) was never written.
      expect(
        readJsonl(join(dir, 'metrics.jsonl'))
          .filter((m) => m.phase === 'eval')
          .map((m) => m.step),
      ).toEqual([0]);
      const resumed = await runCli(['train', '--resume', dir, '--no-progress']);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stderr).toMatch(/resuming .* at RL step 2/);
      const a = readJsonl(join(runs, 'full', 'metrics.jsonl')).map(withoutTiming);
      const b = readJsonl(join(dir, 'metrics.jsonl')).map(withoutTiming);
      expect(b).toEqual(a);
    },
  );

  // A longer SFT, so a kill lands inside it; --stop-after 0 ends the run at the SFT checkpoint.
  const sftRun = ['--sft.steps', '24', '--stop-after', '0'];

  it.skipIf(childError !== null)(
    'after kill -9 during SFT, --resume continues SFT from its newest checkpoint, or restarts it when there is none',
    async () => {
      const ref = await cli([...common, '--name', 'sft-ref', ...sftRun, '--sft.checkpointEvery', '4']);
      expect(ref.code, ref.stderr).toBe(0);
      const want = readJsonl(join(runs, 'sft-ref', 'metrics.jsonl')).map(withoutTiming);
      expect(want.filter((m) => m.phase === 'sft')).toHaveLength(24);
      for (const [name, every, landed] of [
        ['sft-ckpt', '4', /resuming .* in SFT after step \d+ \(.*sft-0000\d\d\)/],
        ['sft-none', '0', /no checkpoint yet .*restarting SFT/],
      ] as const) {
        const dir = join(runs, name);
        const child = startCli([...common, '--name', name, ...sftRun, '--sft.checkpointEvery', every]);
        const latest = join(dir, 'checkpoints', 'latest');
        await waitFor(
          () =>
            every === '0'
              ? readJsonl(join(dir, 'metrics.jsonl')).some((m) => m.phase === 'sft')
              : existsSync(latest) && readFileSync(latest, 'utf8').startsWith('sft-'),
          150_000,
          `${name}: SFT under way`,
        );
        child.kill('SIGKILL');
        expect((await child.result).signal).toBe('SIGKILL');
        const before = readJsonl(join(dir, 'metrics.jsonl'));
        // The kill landed in SFT: it had not finished, and the post-SFT evaluation was never written.
        expect(before.filter((m) => m.phase === 'sft').length, name).toBeLessThan(24);
        expect(
          before.some((m) => m.phase === 'eval'),
          name,
        ).toBe(false);
        const resumed = await runCli(['train', '--resume', dir, '--no-progress', '--stop-after', '0']);
        expect(resumed.code, resumed.stderr).toBe(0);
        expect(resumed.stderr).toMatch(landed);
        expect(readJsonl(join(dir, 'metrics.jsonl')).map(withoutTiming), name).toEqual(want);
        // SFT checkpoints are resume points of SFT only: the end-of-SFT checkpoint replaces them.
        expect(readdirSync(join(dir, 'checkpoints')).sort()).toEqual(['latest', 'step-000000']);
      }
    },
  );

  it('stops with a message that says what to fix', async () => {
    const bad = await cli([...common, '--name', 'bad', '--rl.n', '0', '--rl.clipHigh', '-1']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/rl\.n:/);
    expect(bad.stderr).toMatch(/rl\.clipHigh:/);
    const py = await cli([...common, '--name', 'nopy', '--executor.python', '/nonexistent/python3']);
    expect(py.code).toBe(1);
    expect(py.stderr).toMatch(/Python at "\/nonexistent\/python3" was not found.*install/);
    const redis = await cli([...common, '--name', 'noredis', '--executor', 'redis://127.0.0.1:1']);
    expect(redis.code).toBe(1);
    expect(redis.stderr).toMatch(/Redis at redis:\/\/127\.0\.0\.1:1 refused.*redis-server/);
    const again = await cli([...common, '--name', 'full']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already holds a run.*--resume/);
    // The trainer never deletes what it did not write: no escape from runsDir, no foreign folder.
    const inner = join(runs, 'inner');
    mkdirSync(inner);
    writeFileSync(join(inner, 'keep.txt'), 'k');
    const dots = await cli(['train', '--runsDir', inner, '--name', '..', '--overwrite', '--no-progress']);
    expect(dots.code).toBe(2);
    expect(dots.stderr).toMatch(/name: use letters.*no "\."/);
    const foreign = await cli([...common, '--name', 'inner', '--overwrite']);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toMatch(/inner is not empty and is not a run directory/);
    expect(readFileSync(join(inner, 'keep.txt'), 'utf8')).toBe('k');
  });
});
