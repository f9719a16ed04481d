import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readJsonl, runCli } from './cli.js';

/**
 * `agentrl ablation`: GRPO-RoC vs --no-roc over seeds in one command (here the smoke preset with a
 * short SFT, 2 seeds, 2 runs at a time as child processes of the real CLI), then the page with a
 * band across seeds for every ablation metric and the JSON summary.
 */
const runs = mkdtempSync(join(tmpdir(), 'agentrl-ablation-'));
afterAll(() => rmSync(runs, { recursive: true, force: true }));
const args = ['--preset', 'smoke', '--runsDir', runs, '--sft.steps', '20', '--no-progress'];
const NAMES = ['smoke-roc-s1', 'smoke-roc-s2', 'smoke-noroc-s1', 'smoke-noroc-s2'];

describe('agentrl ablation', () => {
  it('runs RoC and --no-roc per seed with the same budget and renders bands across seeds', async () => {
    const r = await runCli(['ablation', ...args, '--seeds', '1,2', '--jobs', '2']);
    expect(r.code, r.stderr).toBe(0);
    for (const name of NAMES) {
      const cfg = JSON.parse(readFileSync(join(runs, name, 'config.json'), 'utf8'));
      expect(cfg.seed, name).toBe(Number(name.at(-1)));
      expect(cfg.rl.roc, name).toBe(name.includes('-roc-'));
      const m = readJsonl(join(runs, name, 'metrics.jsonl'));
      expect(
        m.filter((x) => x.phase === 'rl').map((x) => x.step),
        name,
      ).toEqual([1, 2, 3, 4]);
      expect(
        m.filter((x) => x.phase === 'eval').map((x) => x.step),
        name,
      ).toEqual([0, 4]);
    }
    // Same seed, same SFT: the arms differ only from RL on.
    const sft = (name: string) =>
      readJsonl(join(runs, name, 'metrics.jsonl'))
        .filter((x) => x.phase === 'sft')
        .map((x) => x.loss);
    expect(sft('smoke-noroc-s1')).toEqual(sft('smoke-roc-s1'));
    expect(sft('smoke-roc-s2')).not.toEqual(sft('smoke-roc-s1'));

    const page = readFileSync(join(runs, 'smoke-ablation.html'), 'utf8');
    expect(page).not.toMatch(/<script/);
    for (const metric of ['posToolErrorBefore', 'responseLength', 'accuracy', 'toolCallsPerTrajectory']) {
      const fig = new RegExp(`<figure data-metric="${metric}">([\\s\\S]*?)</figure>`).exec(page);
      expect(fig, metric).not.toBeNull();
      // One band and one mean line per arm.
      expect(fig![1]!.match(/<polygon class="band"/g), metric).toHaveLength(2);
      expect(fig![1], metric).toMatch(/GRPO-RoC mean, min–max of 2/);
      expect(fig![1], metric).toMatch(/GRPO \(--no-roc\) mean, min–max of 2/);
    }
    const summary = JSON.parse(readFileSync(join(runs, 'smoke-ablation.json'), 'utf8'));
    expect(summary.runs).toEqual(NAMES.slice(0, 2).concat(NAMES.slice(2)));
    expect(summary.arms.map((a: { label: string }) => a.label)).toEqual(['GRPO-RoC', 'GRPO (--no-roc)']);
    for (const arm of summary.arms) {
      expect(arm.seeds).toBe(2);
      expect(arm.metrics.accuracyEnd.perSeed).toHaveLength(2);
      expect(arm.metrics.posToolErrorBeforeEnd.perSeed).toHaveLength(2);
      const { min, max, mean } = arm.metrics.responseLengthEnd;
      expect(min).toBeLessThanOrEqual(mean);
      expect(mean).toBeLessThanOrEqual(max);
    }
    for (const name of NAMES) expect(statSync(join(runs, `${name}.log`)).size, name).toBeGreaterThan(0);
    // Per run: accuracy after SFT (the eval before RL) and at the end, the wall time and the world,
    // all at one commit; the Markdown table beside the JSON names the command and that commit.
    expect(summary.perRun.map((r: { name: string }) => r.name)).toEqual(summary.runs);
    for (const row of summary.perRun) {
      const evals = readJsonl(join(runs, row.name, 'metrics.jsonl')).filter((x) => x.phase === 'eval');
      expect(row.accuracyAfterSft, row.name).toBe(evals[0]!.accuracy);
      expect(row.accuracyEnd, row.name).toBe(evals.at(-1)!.accuracy);
      expect(row.rlSteps, row.name).toBe(4);
      expect(row.world.ranks, row.name).toBe(1);
    }
    expect(summary.commit).toMatch(/^[0-9a-f]{40}$/);
    const table = readFileSync(join(runs, 'smoke-ablation.md'), 'utf8');
    expect(table).toContain(`at commit ${summary.commit.slice(0, 12)}`);
    expect(table).toContain('`agentrl ablation --preset smoke');
    expect(table.match(/^\| (roc|noroc) \| [12] \|/gm)).toHaveLength(4);

    // --report-only renders again from the runs, without training.
    const again = await runCli([
      'ablation',
      ...args,
      '--seeds',
      '1,2',
      '--report-only',
      '--out',
      join(runs, 'again.html'),
    ]);
    expect(again.code, again.stderr).toBe(0);
    expect(readFileSync(join(runs, 'again.html'), 'utf8')).toMatch(/<polygon class="band"/);
  });

  it('--share-sft trains SFT once per seed and starts both arms from its checkpoint', async () => {
    const r = await runCli(['ablation', ...args, '--seeds', '1', '--name', 'shared', '--share-sft']);
    expect(r.code, r.stderr).toBe(0);
    const sft = readJsonl(join(runs, 'shared-sft-s1', 'metrics.jsonl'));
    expect(sft.filter((x) => x.phase === 'sft')).toHaveLength(20);
    expect(sft.some((x) => x.phase === 'rl')).toBe(false);
    const evals: unknown[] = [];
    for (const name of ['shared-roc-s1', 'shared-noroc-s1']) {
      const cfg = JSON.parse(readFileSync(join(runs, name, 'config.json'), 'utf8'));
      expect(cfg.model.init, name).toBe(join(runs, 'shared-sft-s1', 'checkpoints', 'step-000000'));
      expect(cfg.sft.enabled, name).toBe(false);
      const m = readJsonl(join(runs, name, 'metrics.jsonl'));
      expect(m.some((x) => x.phase === 'sft')).toBe(false);
      expect(m.filter((x) => x.phase === 'rl')).toHaveLength(4);
      const { wallSeconds: _, ...first } = m.find((x) => x.phase === 'eval')!;
      evals.push(first);
    }
    // Same weights, same evaluation stream: the arms start from the same point.
    expect(evals[1]).toEqual(evals[0]);
    const summary = JSON.parse(readFileSync(join(runs, 'shared-ablation.json'), 'utf8'));
    expect(summary.sharedSft).toBe(true);
  });

  it('refuses the options it sets per run, and bad seeds', async () => {
    const seed = await runCli(['ablation', ...args, '--seed', '3']);
    expect(seed.code).toBe(2);
    expect(seed.stderr).toMatch(/ablation sets --seed itself/);
    const noroc = await runCli(['ablation', ...args, '--no-roc']);
    expect(noroc.code).toBe(2);
    expect(noroc.stderr).toMatch(/ablation sets --rl\.roc itself/);
    const bad = await runCli(['ablation', ...args, '--seeds', '1,x']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--seeds needs distinct integers/);
    const arms = await runCli(['ablation', ...args, '--arms', 'roc,grpo']);
    expect(arms.code).toBe(2);
    expect(arms.stderr).toMatch(/--arms takes roc and\/or noroc/);
    const missing = await runCli(['ablation', ...args, '--seeds', '7', '--report-only']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/smoke-roc-s7 has no metrics\.jsonl/);
  });
});
