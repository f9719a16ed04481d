import { createCommunicator } from '@agentrl/parallel';
import { parseConfig, resolveConfig } from '../config/load.js';
import { deepMerge } from '../config/merge.js';
import type { TrainConfig } from '../config/schema.js';
import { TrainerError } from '../errors.js';
import { createProgress, type Progress } from '../run/progress.js';
import { RunDir } from '../run/run-dir.js';
import { loadSplit } from '../task/load-split.js';
import { assertDeviceRuns, createEnvironment } from '../train/create-environment.js';
import { loadSftSource } from '../train/sft-source.js';
import { checkTokenBudget } from '../train/token-budget.js';
import { prepareResume, train } from '../train/trainer.js';
import { parseArgs } from './args.js';
import { TRAIN_FLAGS } from './commands.js';
import { renderHelp } from './help.js';

const SILENT: Progress = { start() {}, update() {}, log() {}, stop() {} };

export async function runTrainCommand(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(
      renderHelp(
        'agentrl train [--preset tiny|smoke|roc] [--config file.yaml] [--resume runs/<name>] [--<option> value ...]',
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
  const resumeDir = typeof args.flags.resume === 'string' ? args.flags.resume : undefined;
  const stopAfter =
    typeof args.flags['stop-after'] === 'string' ? Number(args.flags['stop-after']) : undefined;
  if (stopAfter !== undefined && !(Number.isInteger(stopAfter) && stopAfter >= 0)) {
    throw new TrainerError('USAGE', '--stop-after needs a non-negative integer');
  }

  // Under mpirun / srun: this process is one rank of a data-parallel job; rank 0 (the lead) alone
  // creates the run directory and writes to it. Without a launcher: one process, as always.
  const comm = createCommunicator();
  const lead = comm.rank === 0;
  let run: RunDir;
  let cfg: TrainConfig;
  let resume: ReturnType<typeof prepareResume> = null;
  let restart = false;
  if (resumeDir) {
    run = new RunDir(resumeDir);
    // The run's own config is the truth; flags may only change how it is shown, not what it computes.
    const saved = run.readConfig();
    const allowed = Object.keys(args.overrides).filter((k) => k !== 'progress');
    if (allowed.length || args.flags.config || args.flags.preset) {
      throw new TrainerError(
        'USAGE',
        `--resume continues ${resumeDir} with its saved config; drop --config/--preset/option flags (${allowed.join(', ') || 'config'})`,
      );
    }
    cfg = parseConfig(deepMerge(saved, args.overrides), `${run.configPath}`);
    resume = prepareResume(run, { truncate: lead });
    // Killed during SFT before its first checkpoint: nothing to continue from, so SFT starts over.
    restart = resume === null;
  } else {
    cfg = resolveConfig({
      preset: args.flags.preset as string | undefined,
      file: args.flags.config as string | undefined,
      overrides: args.overrides,
    });
    run = RunDir.forConfig(cfg);
    if (lead) run.assertCreatable({ overwrite: Boolean(args.flags.overwrite) });
  }
  if (comm.size > 1 && cfg.device !== 'cpu') {
    throw new TrainerError(
      'USAGE',
      `--device ${cfg.device} with ${comm.size} ranks needs NCCL/RCCL gradients, which are planned; data-parallel ranks train on the cpu device today`,
    );
  }
  if (args.flags['print-config']) {
    if (lead) process.stdout.write(`${JSON.stringify(cfg, null, 2)}\n`);
    comm.finalize();
    return 0;
  }
  assertDeviceRuns(cfg.device); // before the data is read: a --device that cannot run stops here
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
    if (!resumeDir && lead) run.create(cfg, { overwrite: Boolean(args.flags.overwrite) });
    progress.log(
      resume
        ? resume.state.sftDone
          ? `resuming ${run.root} at RL step ${resume.state.rlStep} (${resume.checkpointDir})`
          : `resuming ${run.root} in SFT after step ${resume.state.sftStep} (${resume.checkpointDir})`
        : restart
          ? `resuming ${run.root}: no checkpoint yet (stopped during SFT before its first one), restarting SFT`
          : `run ${run.root}: ${split.train.length} training / ${split.heldOut.length} held-out problems`,
    );
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
