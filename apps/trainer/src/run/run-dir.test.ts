import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../config/load.js';
import { TrainerError } from '../errors.js';
import { RUN_MARKER, RunDir } from './run-dir.js';

/** Every test works in its own temp folder: a bug here must never reach the repository. */
const fresh = () => mkdtempSync(join(tmpdir(), 'agentrl-rundir-'));

function withFiles(dir: string, files: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
}

describe('run directory safety', () => {
  it('never deletes a non-empty directory without the run marker, --overwrite or not', () => {
    const runsDir = fresh();
    const cfg = resolveConfig({ overrides: { runsDir, name: 'models' } });
    const victim = join(runsDir, 'models');
    withFiles(victim, { 'weights.bin': 'precious', 'metrics.jsonl': '' });
    for (const overwrite of [false, true]) {
      const run = RunDir.forConfig(cfg);
      let err: unknown;
      try {
        run.create(cfg, { overwrite });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(TrainerError);
      expect((err as TrainerError).code).toBe('TRAINER_RUN_DIR');
      expect((err as Error).message).toMatch(
        /not a run directory \(no \.agentrl-run marker\).*another --name/,
      );
    }
    expect(readFileSync(join(victim, 'weights.bin'), 'utf8')).toBe('precious');
    expect(readdirSync(victim).sort()).toEqual(['metrics.jsonl', 'weights.bin']);
  });

  it('replaces a marked run only with --overwrite, and removes only what a run holds', () => {
    const runsDir = fresh();
    const cfg = resolveConfig({ overrides: { runsDir, name: 'r1' } });
    const run = RunDir.forConfig(cfg);
    run.create(cfg, { overwrite: false });
    expect(JSON.parse(readFileSync(join(run.root, RUN_MARKER), 'utf8'))).toMatchObject({
      format: 'agentrl-run',
      version: 1,
    });
    writeFileSync(run.metricsPath, '{"phase":"sft","step":1}\n');
    writeFileSync(join(run.root, 'notes.txt'), 'mine');
    expect(() => run.create(cfg, { overwrite: false })).toThrow(/already holds a run.*--resume.*--overwrite/);
    run.create(cfg, { overwrite: true });
    expect(existsSync(run.metricsPath)).toBe(false);
    expect(readFileSync(join(run.root, 'notes.txt'), 'utf8')).toBe('mine');
    expect(run.holdsRun()).toBe(true);
  });

  it('uses a missing or empty directory, refuses a file and a marker of another format', () => {
    const runsDir = fresh();
    mkdirSync(join(runsDir, 'empty'));
    for (const name of ['empty', 'missing']) {
      const cfg = resolveConfig({ overrides: { runsDir, name } });
      RunDir.forConfig(cfg).create(cfg, { overwrite: false });
      expect(existsSync(join(runsDir, name, 'config.json'))).toBe(true);
    }
    writeFileSync(join(runsDir, 'afile'), 'x');
    const f = resolveConfig({ overrides: { runsDir, name: 'afile' } });
    expect(() => RunDir.forConfig(f).create(f, { overwrite: true })).toThrow(/not a directory/);
    withFiles(join(runsDir, 'fake'), { [RUN_MARKER]: '{"format":"other"}', 'data.csv': '1' });
    const g = resolveConfig({ overrides: { runsDir, name: 'fake' } });
    expect(() => RunDir.forConfig(g).create(g, { overwrite: true })).toThrow(/not a run directory/);
    expect(existsSync(join(runsDir, 'fake', 'data.csv'))).toBe(true);
  });

  it('rejects names that leave runsDir or hide the run at config time', () => {
    for (const name of ['.', '..', '../x', 'a/b', 'a\\b', '.hidden', '', 'x'.repeat(129)]) {
      expect(() => resolveConfig({ overrides: { name } }), JSON.stringify(name)).toThrow(/name:/);
    }
    expect(resolveConfig({ overrides: { name: 'qwen3-0.6b_run.2' } }).name).toBe('qwen3-0.6b_run.2');
  });
});
