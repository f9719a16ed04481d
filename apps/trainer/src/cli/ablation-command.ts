import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveConfig } from '../config/load.js';
import type { TrainConfig } from '../config/schema.js';
import { TrainerError } from '../errors.js';
import { renderSeedTable, summarizeSeedRuns } from '../run/ablation-summary.js';
import { readMetrics } from '../run/metrics-log.js';
import { type AblationArm, renderAblationReport } from '../run/report.js';
import { type CommandFlag, parseArgs, splitFlags } from './args.js';
import { TRAIN_FLAGS } from './commands.js';
import { renderHelp } from './help.js';
import { runTrainCommand } from './train-command.js';

/** Flags of `agentrl ablation`; everything else is handed to each `agentrl train`. */
export const ABLATION_FLAGS: CommandFlag[] = [
  { name: 'seeds', value: 'list', description: 'seeds, comma-separated (default 1,2,3)' },
  {
    name: 'arms',
    value: 'list',
    description:
      'arms to run, comma-separated: roc (GRPO-RoC) and/or noroc (--no-roc); default roc,noroc. --arms roc over seeds is the seed table of one recipe',
  },
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
type Arm = (typeof ARMS)[number];

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
  const plan = planAblation(readAblationArgs(argv));
  // SFT first (when shared), then the arms.
  if (!plan.reportOnly) for (const batch of [plan.sftRuns, plan.runs]) await runBatch(batch, plan);
  writeAblationPage(plan, `agentrl ablation ${argv.join(' ')}`);
  return 0;
}

interface AblationArgs {
  cfg: TrainConfig;
  seeds: number[];
  arms: Arm[];
  jobs: number;
  base: string;
  out: string | undefined;
  reportOnly: boolean;
  shareSft: boolean;
  /** The arguments handed to every `agentrl train`. */
  rest: string[];
}

/** The ablation's own flags, checked; the rest must parse as train flags that the ablation does not set itself. */
function readAblationArgs(argv: string[]): AblationArgs {
  const { flags: own, rest } = splitFlags(argv, ABLATION_FLAGS);
  const train = parseArgs(rest, TRAIN_FLAGS);
  if (train.positionals.length)
    throw new TrainerError('USAGE', `unexpected argument "${train.positionals[0]}"; options start with --`);
  const clash = [...Object.keys(train.flags), ...flatKeys(train.overrides)].filter((k) => OWN.has(k));
  if (clash.length)
    throw new TrainerError(
      'USAGE',
      `ablation sets ${clash.map((k) => `--${k}`).join(', ')} itself (seed, RoC on/off and run names per run); drop it`,
    );
  const seedList = (own.seeds as string | undefined) ?? '1,2,3';
  const seeds = seedList.split(',').map((s) => Number(s.trim()));
  if (seeds.length === 0 || seeds.some((s) => !Number.isInteger(s)) || new Set(seeds).size !== seeds.length)
    throw new TrainerError('USAGE', `--seeds needs distinct integers, comma-separated (got "${seedList}")`);
  const armList = (own.arms as string | undefined) ?? 'roc,noroc';
  const armNames = armList.split(',').map((s) => s.trim());
  const arms = ARMS.filter((a) => armNames.includes(a.arm));
  if (arms.length !== armNames.length || new Set(armNames).size !== armNames.length)
    throw new TrainerError(
      'USAGE',
      `--arms takes roc and/or noroc, comma-separated, each once (got "${armList}")`,
    );
  const jobs = own.jobs === undefined ? 1 : Number(own.jobs);
  if (!(Number.isInteger(jobs) && jobs >= 1))
    throw new TrainerError('USAGE', '--jobs needs a positive integer');
  const cfg = resolveConfig({
    preset: train.flags.preset as string | undefined,
    file: train.flags.config as string | undefined,
    overrides: train.overrides,
  });
  const base = (own.name as string | undefined) ?? cfg.name;
  const out = own.out as string | undefined;
  return {
    cfg,
    seeds,
    arms,
    jobs,
    base,
    out,
    reportOnly: !!own['report-only'],
    shareSft: !!own['share-sft'],
    rest,
  };
}

interface PlannedRun {
  arm?: string;
  label: string;
  seed: number;
  name: string;
  args: string[];
}

/** The runs: one per arm and seed, and with --share-sft one SFT run per seed the arms start from. */
function planAblation(a: AblationArgs): AblationArgs & { sftRuns: PlannedRun[]; runs: PlannedRun[] } {
  const sftName = (seed: number) => `${a.base}-sft-s${seed}`;
  const sftRuns = a.shareSft
    ? a.seeds.map((seed) => ({
        label: 'SFT',
        seed,
        name: sftName(seed),
        args: ['train', ...a.rest, '--seed', String(seed), '--name', sftName(seed), '--stop-after', '0'],
      }))
    : [];
  const fromSft = (seed: number) =>
    a.shareSft
      ? [
          '--model.init',
          join(a.cfg.runsDir, sftName(seed), 'checkpoints', 'step-000000'),
          '--sft.enabled',
          'false',
        ]
      : [];
  const runs = a.arms.flatMap(({ arm, label, extra }) =>
    a.seeds.map((seed) => {
      const name = `${a.base}-${arm}-s${seed}`;
      const args = ['train', ...a.rest, ...extra, ...fromSft(seed), '--seed', String(seed), '--name', name];
      return { arm, label, seed, name, args };
    }),
  );
  return { ...a, sftRuns, runs };
}

/** Runs a batch, `jobs` at a time: in this process when jobs is 1, else as child processes with a log each. */
async function runBatch(batch: PlannedRun[], { jobs, cfg }: AblationArgs): Promise<void> {
  const queue = [...batch];
  const worker = async () => {
    for (let r = queue.shift(); r; r = queue.shift()) {
      process.stderr.write(`ablation: ${r.name} (${r.label}, seed ${r.seed})\n`);
      const log = join(cfg.runsDir, `${r.name}.log`);
      const code =
        jobs === 1
          ? await runTrainCommand(r.args.slice(1))
          : await runChild([...r.args, '--no-progress'], log);
      if (code !== 0)
        throw new TrainerError(
          'RUN_DIR',
          `ablation: ${r.name} failed (exit ${code})${jobs === 1 ? '' : `; see ${log}`}`,
        );
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, batch.length) }, worker));
}

/** The page with each arm's band across seeds, and the JSON and Markdown summaries beside it. */
function writeAblationPage(plan: ReturnType<typeof planAblation>, command: string): void {
  const { cfg, base, seeds, runs } = plan;
  // Each run's metrics, read once for the page and the summaries.
  const records = new Map(
    runs.map((r) => {
      const metrics = join(cfg.runsDir, r.name, 'metrics.jsonl');
      if (!existsSync(metrics))
        throw new TrainerError(
          'RUN_DIR',
          `ablation: ${join(cfg.runsDir, r.name)} has no metrics.jsonl; run the ablation without --report-only first`,
        );
      return [r.name, readMetrics(metrics)] as const;
    }),
  );
  const arms: AblationArm[] = plan.arms.map(({ arm, label }) => ({
    label,
    runs: runs
      .filter((r) => r.arm === arm)
      .map((r) => ({ label: `${label} seed ${r.seed}`, records: records.get(r.name)! })),
  }));
  const out = plan.out ?? join(cfg.runsDir, `${base}-ablation.html`);
  const armsTitle = arms.length > 1 ? 'GRPO-RoC vs GRPO' : arms[0]!.label;
  const title = `agentrl ablation: ${base}, ${armsTitle} over seeds ${seeds.join(', ')}`;
  writeFileSync(out, renderAblationReport(title, arms));
  const stem = out.replace(/\.html?$/, '');
  const summary = summarizeSeedRuns({
    base,
    seeds,
    sharedSft: plan.shareSft,
    command,
    runs: runs.map((r) => ({
      ...r,
      arm: r.arm!,
      dir: join(cfg.runsDir, r.name),
      records: records.get(r.name)!,
    })),
    arms,
  });
  writeFileSync(`${stem}.json`, `${JSON.stringify(summary, null, 2)}\n`);
  writeFileSync(`${stem}.md`, renderSeedTable(summary));
  process.stdout.write(`wrote ${out}\n  summary: ${stem}.json\n  table:   ${stem}.md\n`);
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
