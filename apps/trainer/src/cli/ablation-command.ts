import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveConfig } from '../config/load.js';
import { TrainerError } from '../errors.js';
import { readMetrics } from '../run/metrics-log.js';
import { type AblationArm, renderAblationReport, summarizeAblation } from '../run/report.js';
import { type CommandFlag, parseArgs } from './args.js';
import { TRAIN_FLAGS } from './commands.js';
import { renderHelp } from './help.js';
import { runTrainCommand } from './train-command.js';

/** Flags of `agentrl ablation`; everything else is handed to each `agentrl train`. */
export const ABLATION_FLAGS: CommandFlag[] = [
  { name: 'seeds', value: 'list', description: 'seeds, comma-separated (default 1,2,3)' },
  {
    name: 'jobs',
    value: 'int',
    description: 'runs at once (default 1: one after another in this process; 2 = two child processes)',
  },
  {
    name: 'name',
    value: 'base',
    description: 'runs are <base>-roc-s<seed> and <base>-noroc-s<seed> (default: the config name)',
  },
  {
    name: 'out',
    value: 'file',
    description:
      'the ablation page (default <runsDir>/<base>-ablation.html; the summary goes beside it as .json)',
  },
  {
    name: 'share-sft',
    description:
      'run SFT once per seed (<base>-sft-s<seed>) and start both arms from its checkpoint (--model.init, SFT off): half the SFT cost',
  },
  { name: 'report-only', description: 'do not train: render the page from the existing runs' },
];

/** Train flags the ablation sets itself, per run. */
const OWN = new Set(['seed', 'no-roc', 'rl.roc', 'resume', 'stop-after', 'print-config', 'name']);
const ARMS = [
  { arm: 'roc', label: 'GRPO-RoC', extra: ['--rl.roc', 'true'] },
  { arm: 'noroc', label: 'GRPO (--no-roc)', extra: ['--no-roc'] },
] as const;

/**
 * `agentrl ablation [--preset roc] [--seeds 1,2,3] [--jobs 2] [train options]`: GRPO-RoC against
 * plain GRPO (`--no-roc`) with the same config and budget over several seeds, then one page with
 * each arm's curves as mean and min/max band across seeds, and a JSON summary.
 */
export async function runAblationCommand(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(
      renderHelp(
        'agentrl ablation [--preset name] [--config file] [--seeds 1,2,3] [--jobs 1|2] [--<option> value ...]',
        'Runs agentrl train twice per seed, GRPO-RoC and plain GRPO (--no-roc), with the same config and budget,\n' +
          'then writes one HTML page with each arm as mean and min/max band across seeds (tool-error ratio of\n' +
          'positives, response length, held-out accuracy, tool calls per trajectory) and a JSON summary.\n' +
          'Other options are those of agentrl train (see agentrl train --help).',
        [...ABLATION_FLAGS, ...TRAIN_FLAGS.filter((f) => !OWN.has(f.name))],
        false,
      ),
    );
    return 0;
  }
  const own = splitOwnFlags(argv);
  const train = parseArgs(own.rest, TRAIN_FLAGS);
  if (train.positionals.length)
    throw new TrainerError('USAGE', `unexpected argument "${train.positionals[0]}"; options start with --`);
  const clash = [...Object.keys(train.flags), ...flatKeys(train.overrides)].filter((k) => OWN.has(k));
  if (clash.length)
    throw new TrainerError(
      'USAGE',
      `ablation sets ${clash.map((k) => `--${k}`).join(', ')} itself (seed, RoC on/off and run names per run); drop it`,
    );
  const seeds = (own.seeds ?? '1,2,3').split(',').map((s) => Number(s.trim()));
  if (seeds.length === 0 || seeds.some((s) => !Number.isInteger(s)) || new Set(seeds).size !== seeds.length)
    throw new TrainerError('USAGE', `--seeds needs distinct integers, comma-separated (got "${own.seeds}")`);
  const jobs = own.jobs === undefined ? 1 : Number(own.jobs);
  if (!(Number.isInteger(jobs) && jobs >= 1))
    throw new TrainerError('USAGE', '--jobs needs a positive integer');
  const cfg = resolveConfig({
    preset: train.flags.preset as string | undefined,
    file: train.flags.config as string | undefined,
    overrides: train.overrides,
  });
  const base = own.name ?? cfg.name;
  const sftName = (seed: number) => `${base}-sft-s${seed}`;
  const sftRuns = own.shareSft
    ? seeds.map((seed) => ({
        label: 'SFT',
        seed,
        name: sftName(seed),
        args: ['train', ...own.rest, '--seed', String(seed), '--name', sftName(seed), '--stop-after', '0'],
      }))
    : [];
  const fromSft = (seed: number) =>
    own.shareSft
      ? [
          '--model.init',
          join(cfg.runsDir, sftName(seed), 'checkpoints', 'step-000000'),
          '--sft.enabled',
          'false',
        ]
      : [];
  const runs = ARMS.flatMap(({ arm, label, extra }) =>
    seeds.map((seed) => ({
      arm,
      label,
      seed,
      name: `${base}-${arm}-s${seed}`,
      args: [
        'train',
        ...own.rest,
        ...extra,
        ...fromSft(seed),
        '--seed',
        String(seed),
        '--name',
        `${base}-${arm}-s${seed}`,
      ],
    })),
  );
  // SFT first (when shared), then the arms.
  for (const batch of own.reportOnly ? [] : [sftRuns, runs]) {
    const queue = [...batch];
    const worker = async () => {
      for (let r = queue.shift(); r; r = queue.shift()) {
        process.stderr.write(`ablation: ${r.name} (${r.label}, seed ${r.seed})\n`);
        const code =
          jobs === 1
            ? await runTrainCommand(r.args.slice(1))
            : await runChild([...r.args, '--no-progress'], join(cfg.runsDir, `${r.name}.log`));
        if (code !== 0)
          throw new TrainerError(
            'RUN_DIR',
            `ablation: ${r.name} failed (exit ${code})${jobs === 1 ? '' : `; see ${join(cfg.runsDir, `${r.name}.log`)}`}`,
          );
      }
    };
    await Promise.all(Array.from({ length: Math.min(jobs, batch.length) }, worker));
  }
  const arms: AblationArm[] = ARMS.map(({ arm, label }) => ({
    label,
    runs: runs
      .filter((r) => r.arm === arm)
      .map((r) => {
        const metrics = join(cfg.runsDir, r.name, 'metrics.jsonl');
        if (!existsSync(metrics))
          throw new TrainerError(
            'RUN_DIR',
            `ablation: ${join(cfg.runsDir, r.name)} has no metrics.jsonl; run the ablation without --report-only first`,
          );
        return { label: `${label} seed ${r.seed}`, records: readMetrics(metrics) };
      }),
  }));
  const out = own.out ?? join(cfg.runsDir, `${base}-ablation.html`);
  const title = `agentrl ablation: ${base}, GRPO-RoC vs GRPO over seeds ${seeds.join(', ')}`;
  writeFileSync(out, renderAblationReport(title, arms));
  const summaryPath = out.replace(/\.html?$/, '') + '.json';
  writeFileSync(
    summaryPath,
    `${JSON.stringify({ base, seeds, sharedSft: own.shareSft, runs: runs.map((r) => r.name), arms: summarizeAblation(arms) }, null, 2)}\n`,
  );
  process.stdout.write(`wrote ${out}\n  summary: ${summaryPath}\n`);
  return 0;
}

/** Takes the ablation's own flags out of argv; the rest goes to every train run. */
function splitOwnFlags(argv: string[]): {
  seeds?: string;
  jobs?: string;
  name?: string;
  out?: string;
  reportOnly: boolean;
  shareSft: boolean;
  rest: string[];
} {
  const own: Record<string, string> = {};
  let reportOnly = false;
  let shareSft = false;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    const eq = token.indexOf('=');
    const name = token.startsWith('--') ? token.slice(2, eq === -1 ? undefined : eq) : '';
    if (name === 'report-only' || name === 'share-sft') {
      if (name === 'report-only') reportOnly = true;
      else shareSft = true;
      continue;
    }
    if (['seeds', 'jobs', 'name', 'out'].includes(name)) {
      const value = eq === -1 ? argv[++i] : token.slice(eq + 1);
      if (value === undefined || value.startsWith('--'))
        throw new TrainerError('USAGE', `--${name} needs a value; see agentrl ablation --help`);
      own[name] = value;
      continue;
    }
    rest.push(token);
  }
  return { ...own, reportOnly, shareSft, rest };
}

function flatKeys(o: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(o).flatMap(([k, v]) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? flatKeys(v as Record<string, unknown>, `${prefix}${k}.`)
      : [`${prefix}${k}`],
  );
}

/** Runs `agentrl <args>` as a child process (this CLI's own entry point), output to a log file. */
function runChild(args: string[], logPath: string): Promise<number> {
  const js = fileURLToPath(new URL('../bin.js', import.meta.url));
  const bin = existsSync(js) ? js : fileURLToPath(new URL('../bin.ts', import.meta.url));
  const log = createWriteStream(logPath);
  const child = spawn(process.execPath, [...process.execArgv, bin, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.pipe(log, { end: false });
  child.stderr.pipe(log, { end: false });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      log.end();
      resolve(code ?? 1);
    });
  });
}
