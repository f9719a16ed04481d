import { createCommunicator, probeNccl } from '@agentrl/parallel';
import { parseConfig, resolveConfig } from '../config/load.js';
import { deepMerge } from '../config/merge.js';
import type { TrainConfig } from '../config/schema.js';
import { TrainerError } from '../errors.js';
import { createProgress, type Progress } from '../run/progress.js';
import { RunDir } from '../run/run-dir.js';
import { describeWorld } from '../run/world.js';
import { loadSplit } from '../task/load-split.js';
import type { ProblemSplit } from '../task/problem.js';
import { assertDeviceRuns, assertModelDir, createEnvironment } from '../train/create-environment.js';
import { prepareResume } from '../train/resume.js';
import { loadSftSource } from '../train/sft-source.js';
import { checkTokenBudget } from '../train/token-budget.js';
import { train } from '../train/trainer.js';
import { type ParsedArgs, parseArgs } from './args.js';
import { TRAIN_FLAGS } from './commands.js';
import { renderHelp } from './help.js';

const SILENT: Progress = { start() {}, update() {}, log() {}, stop() {} };

export async function runTrainCommand(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(
      renderHelp(
        'agentrl train [--preset tiny|smoke|learn|roc] [--config file.yaml] [--resume runs/<name>] [--<option> value ...]',
        'Trains a policy with the rStar2-Agent recipe: a format-only SFT cold start, then GRPO-RoC stages with\n' +
          'growing response budgets (the last on problems not yet solved by every sample). Writes runs/<name>/:\n' +
          'config.json, metrics.jsonl, checkpoints/ (HF safetensors + optimizer + trainer state), report.html.',
        TRAIN_FLAGS,
        true,
      ),
    );
    return 0;
  }
  const args = parseArgs(argv, TRAIN_FLAGS);
  if (args.positionals.length)
    throw new TrainerError('USAGE', `unexpected argument "${args.positionals[0]}"; options start with --`);
  const stopAfter =
    typeof args.flags['stop-after'] === 'string' ? Number(args.flags['stop-after']) : undefined;
  if (stopAfter !== undefined && !(Number.isInteger(stopAfter) && stopAfter >= 0)) {
    throw new TrainerError('USAGE', '--stop-after needs a non-negative integer');
  }
  // Under mpirun / srun: this process is one rank of a data-parallel job; rank 0 (the lead) alone
  // creates the run directory and writes to it. Without a launcher: one process, as always.
  const comm = createCommunicator();
  const lead = comm.rank === 0;
  // --print-config only shows what a run would use: an existing run directory is no reason to refuse.
  const { run, cfg, resume, restart, isNew } = openRun(args, lead && !args.flags['print-config']);
  if (args.flags['print-config']) {
    if (lead) process.stdout.write(`${JSON.stringify(cfg, null, 2)}\n`);
    comm.finalize();
    return 0;
  }
  if (!resume && cfg.model.init !== null) assertModelDir(cfg.model.init, 'model.init');
  assertDeviceRuns(cfg.device); // before the data is read: a --device that cannot run stops here
  assertRanksSupported(cfg, comm.size);
  // Other ranks are silent: rank 0 speaks for the job.
  const progress = lead ? createProgress(cfg.progress) : SILENT;
  const split = await loadSplit(cfg, (l) => progress.log(l));
  const env = await createEnvironment(cfg, {
    initDir: resume?.checkpointDir ?? cfg.model.init,
    resumePhase: resume ? (resume.state.rlStep > 0 ? 'rl' : 'sft') : undefined,
    runRoot: run.root,
    log: (l) => progress.log(l),
  });
  try {
    checkTokenBudget(cfg, [...split.train, ...split.heldOut], env.tokenizer, env.chatFormat);
    const sftDemos = resume?.state.sftDone
      ? null
      : await loadSftSource(cfg, split.train, (l) => progress.log(l));
    if (isNew && lead) {
      run.create(cfg, { overwrite: Boolean(args.flags.overwrite), world: describeWorld(comm.size) });
    } else if (lead) {
      run.recordResume({ ...describeWorld(comm.size), rlStep: resume?.state.rlStep ?? 0 });
    }
    progress.log(startLine(run, split, resume, restart));
    const result = await train({
      cfg,
      run,
      split,
      env,
      progress,
      resumeState: resume?.state ?? null,
      stopAfter,
      sftDemos,
    });
    comm.finalize();
    if (!lead) return 0;
    const acc = result.finalEval
      ? `held-out avg@${cfg.eval.k} ${(result.finalEval.accuracy * 100).toFixed(1)}%`
      : '';
    process.stdout.write(
      `${result.stopped ? 'stopped' : 'done'} after ${result.state.rlStep} RL steps, ${result.state.wallSeconds.toFixed(0)} s; ${acc}\n` +
        `  metrics: ${run.metricsPath}\n  report:  ${run.reportPath}\n`,
    );
    return 0;
  } finally {
    await env.close();
  }
}

interface OpenedRun {
  run: RunDir;
  cfg: TrainConfig;
  resume: ReturnType<typeof prepareResume>;
  /** --resume of a run killed during SFT before its first checkpoint: SFT starts over. */
  restart: boolean;
  /** Not --resume: the run directory is created once the data and the environment are ready. */
  isNew: boolean;
}

/** The run directory and config: a new run from preset, file and flags, or --resume of a saved one. */
function openRun(args: ParsedArgs, lead: boolean): OpenedRun {
  const resumeDir = typeof args.flags.resume === 'string' ? args.flags.resume : undefined;
  if (!resumeDir) {
    const cfg = resolveConfig({
      preset: args.flags.preset as string | undefined,
      file: args.flags.config as string | undefined,
      overrides: args.overrides,
    });
    const run = RunDir.forConfig(cfg);
    if (lead) run.assertCreatable({ overwrite: Boolean(args.flags.overwrite) });
    return { run, cfg, resume: null, restart: false, isNew: true };
  }
  const run = new RunDir(resumeDir);
  // The run's own config is the truth; flags may only change how it is shown, not what it computes.
  const saved = run.readConfig();
  const allowed = Object.keys(args.overrides).filter((k) => k !== 'progress');
  if (allowed.length || args.flags.config || args.flags.preset) {
    throw new TrainerError(
      'USAGE',
      `--resume continues ${resumeDir} with its saved config; drop --config/--preset/option flags (${allowed.join(', ') || 'config'})`,
    );
  }
  const cfg = parseConfig(deepMerge(saved, args.overrides), `${run.configPath}`);
  const resume = prepareResume(run, { truncate: lead && !args.flags['print-config'] });
  return { run, cfg, resume, restart: resume === null, isNew: false };
}

/**
 * GPU ranks reduce their gradients on the device with NCCL (cuda) or RCCL (rocm): a job of more
 * than one GPU rank without it stops here, before any data is read, with the reason and the way out.
 */
export function assertRanksSupported(cfg: TrainConfig, ranks: number): void {
  if (ranks <= 1 || cfg.device === 'cpu') return;
  const probe = probeNccl();
  if (!probe.available) {
    throw new TrainerError(
      'USAGE',
      `--device ${cfg.device} with ${ranks} ranks all-reduces gradients with ${cfg.device === 'cuda' ? 'NCCL' : 'RCCL'}, which is ${probe.detail}; install it (or set AGENTRL_NCCL_LIBRARY), or train the ranks with --device cpu`,
    );
  }
}

function startLine(run: RunDir, split: ProblemSplit, resume: OpenedRun['resume'], restart: boolean): string {
  if (resume)
    return resume.state.sftDone
      ? `resuming ${run.root} at RL step ${resume.state.rlStep} (${resume.checkpointDir})`
      : `resuming ${run.root} in SFT after step ${resume.state.sftStep} (${resume.checkpointDir})`;
  return restart
    ? `resuming ${run.root}: no checkpoint yet (stopped during SFT before its first one), restarting SFT`
    : `run ${run.root}: ${split.train.length} training / ${split.heldOut.length} held-out problems`;
}
