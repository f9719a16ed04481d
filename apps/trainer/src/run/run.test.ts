import { appendFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../config/load.js';
import { MetricsLog, withoutTiming } from './metrics-log.js';
import { renderReport } from './report.js';
import { RunDir } from './run-dir.js';

const tmp = mkdtempSync(join(tmpdir(), 'agentrl-run-'));

describe('run directory', () => {
  it('writes checkpoints atomically and points latest at the newest complete one', async () => {
    const cfg = resolveConfig({ overrides: { runsDir: tmp, name: 'a' } });
    const run = RunDir.forConfig(cfg);
    run.create(cfg, { overwrite: false });
    expect(JSON.parse(readFileSync(run.configPath, 'utf8')).name).toBe('a');
    expect(run.latestCheckpoint()).toBeNull();
    await run.writeCheckpoint('step-000002', async (dir) =>
      writeFileSync(join(dir, 'trainer-state.json'), '{}'),
    );
    expect(run.latestCheckpoint()).toBe('step-000002');
    // a writer that dies half-way leaves the previous checkpoint as latest
    await expect(
      run.writeCheckpoint('step-000004', async () => {
        throw new Error('killed');
      }),
    ).rejects.toThrow('killed');
    expect(run.latestCheckpoint()).toBe('step-000002');
    expect(existsSync(run.checkpointDir('step-000004'))).toBe(false);
    appendFileSync(run.metricsPath, '{}\n');
    expect(() => run.create(cfg, { overwrite: false })).toThrow(/--resume/);
  });

  it('trims metrics to the checkpoint, torn last line included', () => {
    const path = join(tmp, 'm.jsonl');
    const log = new MetricsLog(path);
    log.append({ phase: 'sft', step: 1, stage: 'sft', loss: 2 });
    for (let s = 1; s <= 5; s++)
      log.append({ phase: 'rl', step: s, stage: 's1', reward: s / 10, timeTrain: Math.random() });
    appendFileSync(path, '{"phase":"rl","st');
    expect(log.read()).toHaveLength(6);
    expect(log.truncateTo((r) => r.phase === 'sft' || r.step <= 3)).toBe(4);
    expect(readFileSync(path, 'utf8').trim().split('\n')).toHaveLength(4);
    expect(withoutTiming(log.read()[1]!)).toEqual({ phase: 'rl', step: 1, stage: 's1', reward: 0.1 });
  });

  it('renders a self-contained report with inline SVG curves', () => {
    const records = [
      { phase: 'eval' as const, step: 0, stage: 'sft', accuracy: 0.3 },
      ...Array.from({ length: 6 }, (_, i) => ({
        phase: 'rl' as const,
        step: i + 1,
        stage: 's1',
        reward: i / 6,
        responseLength: 80 - i,
        posToolErrorBefore: 0.2,
        posToolErrorAfter: 0.05,
      })),
      { phase: 'eval' as const, step: 6, stage: 's1', accuracy: 0.8 },
    ];
    const html = renderReport('t', [
      { label: 'roc', records },
      { label: 'no-roc', records },
    ]);
    expect(html).toMatch(/^<!doctype html>/);
    expect((html.match(/<svg /g) ?? []).length).toBeGreaterThanOrEqual(4);
    expect(html).toContain('80.0%');
    expect(html).not.toMatch(/<script|https?:\/\/(?!www\.w3\.org)/);
  });
});
