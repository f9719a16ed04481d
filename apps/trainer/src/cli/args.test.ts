import { EXECUTOR_FLAGS } from '@agentrl/executor';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../config/load.js';
import { TrainerError } from '../errors.js';
import { ABLATION_FLAGS } from './ablation-command.js';
import { parseArgs, splitFlags } from './args.js';
import { EVAL_CONFIG, EVAL_FLAGS, serveFlags, TRAIN_FLAGS } from './commands.js';
import { renderHelp } from './help.js';
import { runTrainCommand } from './train-command.js';

function usageError(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof TrainerError && e.code === 'TRAINER_USAGE') return e.message;
    throw e;
  }
  throw new Error('expected a usage error');
}

describe('argv parsing (node:util parseArgs over the flag table and every config leaf)', () => {
  it('reads a nullable number (--model.initStd) as a number, or null', () => {
    expect(parseArgs(['--model.initStd', '0.02'], TRAIN_FLAGS).overrides).toEqual({
      model: { initStd: 0.02 },
    });
    expect(parseArgs(['--model.initStd', 'null'], TRAIN_FLAGS).overrides).toEqual({
      model: { initStd: null },
    });
    expect(resolveConfig({ overrides: { model: { initStd: 0.05 } } }).model.initStd).toBe(0.05);
  });

  it('reads --flag value, --flag=value, booleans with and without a word, --no-<bool>, negatives', () => {
    const a = parseArgs(
      [
        '--seed=-3',
        '--rl.n',
        '-1',
        '--rl.roc',
        'false',
        '--progress',
        '--no-rl.normalizeStd',
        '--sft.enabled=false',
        '--task.digits',
        '4,2',
        '--model.init',
        'null',
        '--resume',
        'runs/x',
        '--overwrite',
      ],
      TRAIN_FLAGS,
    );
    expect(a.overrides).toEqual({
      seed: -3,
      rl: { n: -1, roc: false, normalizeStd: false },
      progress: true,
      sft: { enabled: false },
      task: { digits: [4, 2] },
      model: { init: null },
    });
    expect(a.flags).toEqual({ resume: 'runs/x', overwrite: true });
    expect(a.positionals).toEqual([]);
  });

  it('collects a repeatable flag in order and keeps positionals', () => {
    const a = parseArgs(['--data', 'a.jsonl', 'extra', '--data=b.parquet', '--k', '8'], EVAL_FLAGS);
    expect(a.flags.data).toEqual(['a.jsonl', 'b.parquet']);
    expect(a.overrides).toEqual({ eval: { k: 8 } });
    expect(a.positionals).toEqual(['extra']);
  });

  it('suggests the closest option for a misspelt one, and nothing for a name far from every option', () => {
    const hint = (arg: string, flags = TRAIN_FLAGS) => usageError(() => parseArgs([arg, '1'], flags));
    expect(hint('--rl.promptsPerstep')).toBe(
      'unknown option --rl.promptsPerstep; did you mean --rl.promptsPerStep? run with --help to list every option',
    );
    expect(hint('--rl.clipHig')).toMatch(/did you mean --rl\.clipHigh\?/);
    expect(hint('--clipHigh')).toMatch(/did you mean --rl\.clipHigh\?/);
    expect(hint('--prest')).toMatch(/did you mean --preset\?/);
    expect(hint('--chekpoint', EVAL_FLAGS)).toMatch(/did you mean --checkpoint\?/);
    expect(hint('--zzz')).toBe('unknown option --zzz; run with --help to list every option');
  });

  it('eval lists and accepts only the options it reads', () => {
    const help = renderHelp('agentrl eval', '', EVAL_FLAGS, EVAL_CONFIG);
    for (const used of [
      '--eval.problems ',
      '--eval.k ',
      '--model.init ',
      '--executor.url ',
      '--task.evalFiles ',
    ])
      expect(help).toContain(used);
    for (const unused of [
      '--sft.',
      '--rl.lr ',
      '--rl.stages ',
      '--parallel.',
      '--runsDir ',
      '--checkpointEvery ',
    ])
      expect(help).not.toContain(unused);
    expect(help).toContain('--rl.maxTurns ');
    expect(parseArgs(['--eval.problems', '5'], EVAL_FLAGS, EVAL_CONFIG).overrides).toEqual({
      eval: { problems: 5 },
    });
    expect(usageError(() => parseArgs(['--sft.steps', '5'], EVAL_FLAGS, EVAL_CONFIG))).toBe(
      '--sft.steps is not used by agentrl eval; run agentrl eval --help for its options',
    );
    expect(usageError(() => parseArgs(['--eval.problem', '5'], EVAL_FLAGS, EVAL_CONFIG))).toMatch(
      /did you mean --eval\.problems\?/,
    );
  });

  it('names an unknown flag, a missing value and a value given to a switch', () => {
    expect(usageError(() => parseArgs(['--rl.learningRate', '1'], TRAIN_FLAGS))).toBe(
      'unknown option --rl.learningRate; run with --help to list every option',
    );
    expect(usageError(() => parseArgs(['-x'], TRAIN_FLAGS))).toMatch(/unknown option -x/);
    expect(usageError(() => parseArgs(['--engine'], TRAIN_FLAGS))).toBe('--engine needs a value; see --help');
    expect(usageError(() => parseArgs(['--rl.lr', '--seed', '2'], TRAIN_FLAGS))).toBe(
      '--rl.lr needs a value; see --help',
    );
    expect(usageError(() => parseArgs(['--overwrite=yes'], TRAIN_FLAGS))).toBe(
      '--overwrite takes no value; see --help',
    );
  });

  it("splits a command's own flags from the arguments it hands on (agentrl ablation)", () => {
    const argv = [
      '--seeds',
      '1,2',
      '--rl.lr',
      '1e-4',
      '--share-sft',
      '--seed=-3',
      '--out=x.html',
      '--preset',
      'smoke',
    ];
    expect(splitFlags(argv, ABLATION_FLAGS)).toEqual({
      flags: { seeds: '1,2', 'share-sft': true, out: 'x.html' },
      rest: ['--rl.lr', '1e-4', '--seed=-3', '--preset', 'smoke'],
    });
    expect(usageError(() => splitFlags(['--jobs', '--seeds', '1'], ABLATION_FLAGS))).toBe(
      '--jobs needs a value; see --help',
    );
  });

  it('a bad number is an error that names the option (zod for config leaves, the command for its own)', async () => {
    const cfgErr = (() => {
      try {
        resolveConfig({ overrides: parseArgs(['--rl.lr', 'fast', '--seed', '1.5'], TRAIN_FLAGS).overrides });
      } catch (e) {
        return e as TrainerError;
      }
      throw new Error('expected a config error');
    })();
    expect(cfgErr.code).toBe('TRAINER_CONFIG_INVALID');
    expect(cfgErr.message).toMatch(/rl\.lr:/);
    expect(cfgErr.message).toMatch(/seed:/);
    await expect(runTrainCommand(['--stop-after', 'three'])).rejects.toThrow(
      '--stop-after needs a non-negative integer',
    );
  });

  it("agentrl executor serve|worker --help lists the executor's own flags, each of its subcommand", () => {
    for (const sub of ['serve', 'worker'] as const) {
      const help = renderHelp(`agentrl executor ${sub}`, '', serveFlags(sub), false);
      for (const f of EXECUTOR_FLAGS) {
        if (f.commands.includes(sub)) expect(help).toContain(`--${f.name} <${f.value}>`);
        else expect(help).not.toContain(`--${f.name} `);
      }
    }
  });
});
