import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseArgs } from '../cli/args.js';
import { TRAIN_FLAGS } from '../cli/commands.js';
import { renderHelp } from '../cli/help.js';
import { TrainerError } from '../errors.js';
import { resolveConfig } from './load.js';
import { listConfigOptions } from './options.js';

const tmp = mkdtempSync(join(tmpdir(), 'agentrl-config-'));

function configError(fn: () => unknown): TrainerError {
  try {
    fn();
  } catch (e) {
    if (e instanceof TrainerError) return e;
    throw e;
  }
  throw new Error('expected a TrainerError');
}

describe('config', () => {
  it('defaults to the tiny preset with the reference hyper-parameters', () => {
    const cfg = resolveConfig();
    expect(cfg.name).toBe('tiny');
    expect(cfg.rl).toMatchObject({
      clipLow: 0.2,
      clipHigh: 0.28,
      dualClip: 3,
      aggregation: 'token-mean',
      roc: true,
      maxTurns: 5,
    });
    expect(cfg.rl.oversample).toBe(2 * cfg.rl.n);
    const lens = cfg.rl.stages.map((s) => s.maxResponseTokens);
    expect([...lens].sort((a, b) => a - b)).toEqual(lens);
    expect(cfg.rl.stages.at(-1)!.hardOnly).toBe(true);
  });

  it('the roc preset: the zero-padded task, budgets that fit an error and its fix, tiny elsewhere', () => {
    const roc = resolveConfig({ preset: 'roc' });
    const tiny = resolveConfig();
    expect(roc.task.zeroPadShare).toBe(0.5);
    expect(roc.task.digits).toEqual([4, 4]);
    expect(tiny.task.zeroPadShare).toBe(0);
    expect(roc.rl.stages.map((s) => s.maxResponseTokens)).toEqual([448, 512, 512]);
    expect(roc.rl.stages.reduce((a, s) => a + s.steps, 0)).toBe(24);
    expect(roc.sft.steps).toBe(3000);
    expect(roc.eval.maxResponseTokens).toBe(512);
    expect(roc.eval.problems).toBe(100);
    expect(roc.rl.lr).toBe(3e-4);
    expect({ ...roc.model, ...roc.sft.mix }).toEqual({
      ...tiny.model,
      tool: 0.4,
      noTool: 0.25,
      toolErrorFixed: 0.35,
    });
  });

  it('applies preset, then file, then flags', () => {
    const file = join(tmp, 'c.yaml');
    writeFileSync(file, 'seed: 7\nrl:\n  lr: 0.5\n  n: 3\n');
    const args = parseArgs(
      ['--rl.lr', '1e-4', '--no-roc', '--task.digits', '4,2', '--engine', 'http://x:1'],
      TRAIN_FLAGS,
    );
    const cfg = resolveConfig({ preset: 'smoke', file, overrides: args.overrides });
    expect(cfg.name).toBe('smoke');
    expect(cfg.seed).toBe(7);
    expect(cfg.rl.n).toBe(3);
    expect(cfg.rl.lr).toBe(1e-4);
    expect(cfg.rl.roc).toBe(false);
    expect(cfg.task.digits).toEqual([4, 2]);
    expect(cfg.engine.url).toBe('http://x:1');
  });

  it('names the field path of every invalid value', () => {
    const args = parseArgs(
      ['--rl.n', '-1', '--model.hiddenSize', 'wide', '--rl.aggregation', 'sum'],
      TRAIN_FLAGS,
    );
    const err = configError(() => resolveConfig({ overrides: args.overrides }));
    expect(err.code).toBe('TRAINER_CONFIG_INVALID');
    expect(err.message).toMatch(/rl\.n:/);
    expect(err.message).toMatch(/model\.hiddenSize:/);
    expect(err.message).toMatch(/rl\.aggregation:/);
  });

  it('--precision: fp32 by default, bf16 with a GPU device, refused on the cpu with the way out', () => {
    expect(resolveConfig().precision).toBe('fp32');
    const gpu = parseArgs(['--device', 'cuda', '--precision', 'bf16'], TRAIN_FLAGS);
    expect(resolveConfig({ overrides: gpu.overrides })).toMatchObject({ device: 'cuda', precision: 'bf16' });
    const cpu = parseArgs(['--precision', 'bf16'], TRAIN_FLAGS);
    const err = configError(() => resolveConfig({ overrides: cpu.overrides }));
    expect(err.code).toBe('TRAINER_CONFIG_INVALID');
    expect(err.message).toMatch(
      /precision: bf16 runs on a GPU device only .*add --device cuda or --device rocm/,
    );
  });

  it('rejects unknown keys in a file (typos do not pass silently) and unknown flags', () => {
    const file = join(tmp, 'typo.json');
    writeFileSync(file, JSON.stringify({ rl: { learningRate: 1 } }));
    expect(configError(() => resolveConfig({ file })).message).toMatch(/rl.*learningRate/);
    expect(configError(() => parseArgs(['--rl.learningRate', '1'], TRAIN_FLAGS)).code).toBe('TRAINER_USAGE');
  });

  it('says what to fix for a bad file, a bad preset and oversample < n', () => {
    expect(configError(() => resolveConfig({ file: join(tmp, 'missing.yaml') })).message).toMatch(
      /cannot read/,
    );
    const bad = join(tmp, 'bad.yaml');
    writeFileSync(bad, 'rl: [1, 2\n');
    expect(configError(() => resolveConfig({ file: bad })).message).toMatch(/not valid YAML/);
    expect(configError(() => resolveConfig({ preset: 'huge' })).message).toMatch(/tiny, smoke/);
    expect(configError(() => resolveConfig({ overrides: { rl: { n: 8, oversample: 4 } } })).message).toMatch(
      /rl\.oversample/,
    );
  });

  it('blames a wrong value on the flag or file that gave it, not on the preset', () => {
    const flags = parseArgs(['--rl.n', '0', '--seed', 'x'], TRAIN_FLAGS);
    const fromFlags = configError(() =>
      resolveConfig({ preset: 'tiny', overrides: flags.overrides }),
    ).message;
    expect(fromFlags).toMatch(/rl\.n: .*\(set by --rl\.n\)/);
    expect(fromFlags).toMatch(/seed: .*\(set by --seed\)/);
    const file = join(tmp, 'wrong.yaml');
    writeFileSync(file, 'rl:\n  clipHigh: -1\n  stages: [{ name: s1, steps: -2, maxResponseTokens: 64 }]\n');
    const fromFile = configError(() => resolveConfig({ file })).message;
    expect(fromFile).toContain(`rl.clipHigh: `);
    expect(fromFile).toMatch(new RegExp(`clipHigh: .*\\(set by ${file.replace(/[.]/g, '\\.')}\\)`));
    expect(fromFile).toMatch(/rl\.stages\.0\.steps: .*\(set by .*wrong\.yaml\)/);
    const both = configError(() =>
      resolveConfig({ file, overrides: { rl: { n: 8, oversample: 4, clipHigh: 0.3, stages: [] } } }),
    ).message;
    expect(both).not.toMatch(/set by preset/);
  });

  it('documents every config leaf in --help', () => {
    const help = renderHelp('agentrl train', '', TRAIN_FLAGS, true);
    const options = listConfigOptions();
    expect(options.length).toBeGreaterThan(50);
    for (const o of options) {
      expect(help).toContain(`--${o.path.join('.')} `);
      expect(o.description.length).toBeGreaterThan(5);
    }
    for (const f of TRAIN_FLAGS) expect(help).toContain(`--${f.name}`);
  });

  it('parses the example config of the README', () => {
    const file = join(dirname(fileURLToPath(import.meta.url)), '../../examples/qwen3-math.yaml');
    const cfg = resolveConfig({ file });
    expect(cfg.model.chatTemplateKwargs).toEqual({ enable_thinking: false });
    expect(cfg.task).toMatchObject({ kind: 'files', reward: 'rstar' });
    expect(cfg.engine).toMatchObject({ kind: 'sglang', model: 'qwen3-0.6b' });
    expect(cfg.rl.microBatchTokens).toBeGreaterThan(
      Math.max(...cfg.rl.stages.map((s) => s.maxResponseTokens)),
    );
  });
});
