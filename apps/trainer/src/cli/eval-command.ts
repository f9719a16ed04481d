import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig, readConfigFile, resolveConfig } from '../config/load.js';
import { deepMerge } from '../config/merge.js';
import type { TrainConfig } from '../config/schema.js';
import { loadDatasetFiles } from '../data/dataset.js';
import { TrainerError } from '../errors.js';
import { evaluate } from '../eval/evaluate.js';
import { evalOptionsOf } from '../eval/options.js';
import { RunDir } from '../run/run-dir.js';
import { loadSplit } from '../task/load-split.js';
import type { Problem } from '../task/problem.js';
import { assertModelDir, createEnvironment } from '../train/create-environment.js';
import { NO_HELD_OUT } from '../train/eval-phase.js';
import { rewardModeOf } from '../train/reward.js';
import { createRunRolloutFactory } from '../train/rollout-factory.js';
import { parseArgs } from './args.js';
import { EVAL_CONFIG, EVAL_FLAGS } from './commands.js';
import { renderHelp } from './help.js';

export async function runEvalCommand(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(
      renderHelp(
        'agentrl eval (--checkpoint runs/<name>[/checkpoints/<tag>] | --engine URL) [--data file.jsonl ...] [--k 4]',
        'pass@1 averaged over k samples per problem (avg@k) on the held-out split of the config, or on dataset\n' +
          'files: jsonl/parquet rows with a prompt and reward_model.ground_truth, or question/answer. Rows without\n' +
          'an answer are skipped and counted.',
        EVAL_FLAGS,
        EVAL_CONFIG,
      ),
    );
    return 0;
  }
  const args = parseArgs(argv, EVAL_FLAGS, EVAL_CONFIG);
  const checkpoint = args.flags.checkpoint as string | undefined;
  if (!checkpoint && !args.overrides.engine) {
    throw new TrainerError('USAGE', 'eval needs --checkpoint <dir> or --engine <url>');
  }
  // A run directory brings its config (model shape, task split, seed); flags still override.
  if (checkpoint) assertModelDir(checkpoint, '--checkpoint');
  let ckptDir: string | null = null;
  let cfg: TrainConfig;
  if (
    checkpoint &&
    existsSync(join(checkpoint, 'config.json')) &&
    existsSync(join(checkpoint, 'checkpoints'))
  ) {
    const run = new RunDir(checkpoint);
    const tag = run.latestCheckpoint();
    if (!tag) throw new TrainerError('CHECKPOINT', `eval: ${checkpoint} has no complete checkpoint yet`);
    ckptDir = run.checkpointDir(tag);
    cfg = parseConfig(deepMerge(run.readConfig(), args.overrides), run.configPath);
  } else {
    ckptDir = checkpoint ?? null;
    cfg = resolveConfig({
      preset: args.flags.preset as string | undefined,
      file: args.flags.config as string | undefined,
      overrides: args.overrides,
    });
  }
  const data = args.flags.data as string[] | undefined;
  let problems: Problem[];
  let skipped = 0;
  if (data?.length) {
    const loaded = await loadDatasetFiles(data);
    // Every row of the files, unless --eval.problems (or the config file) asks for the first N.
    const limit = explicitProblems(args.overrides, args.flags.config) ? cfg.eval.problems : Infinity;
    problems = loaded.problems.slice(0, limit);
    if (problems.length < loaded.problems.length)
      process.stderr.write(
        `eval: the first ${problems.length} of ${loaded.problems.length} problems (--eval.problems)\n`,
      );
    skipped = loaded.skipped.length;
    if (skipped)
      process.stderr.write(
        `eval: skipped ${skipped} rows without a prompt or answer (first: ${loaded.skipped[0]!.file} row ${loaded.skipped[0]!.row}: ${loaded.skipped[0]!.reason})\n`,
      );
  } else {
    problems = (await loadSplit(cfg)).heldOut.slice(0, cfg.eval.problems);
    if (problems.length === 0) throw new TrainerError('DATASET', `eval: ${NO_HELD_OUT}`);
  }
  const env = await createEnvironment(cfg, { initDir: ckptDir, trainable: false });
  try {
    const factory = await createRunRolloutFactory(cfg, env);
    // Dataset files are general maths: verify the boxed answer unless task.reward says otherwise.
    const rewardMode = data?.length && cfg.task.reward === 'auto' ? 'boxed' : rewardModeOf(cfg.task);
    const r = await evaluate(factory, problems, env.verify, evalOptionsOf(cfg, rewardMode));
    process.stdout.write(
      `avg@${r.k} pass@1 ${(r.accuracy * 100).toFixed(2)}%  pass@${r.k} ${(r.passAtK * 100).toFixed(2)}%  ` +
        `on ${r.problems} problems (${skipped} rows skipped); tool use ${(r.toolUseRate * 100).toFixed(0)}%, ` +
        `${r.toolCallsPerTrajectory.toFixed(2)} calls/trajectory, ${r.responseLength.toFixed(0)} response tokens\n`,
    );
    if (typeof args.flags.out === 'string')
      writeFileSync(args.flags.out, `${JSON.stringify({ ...r, skipped }, null, 2)}\n`);
    return 0;
  } finally {
    await env.close();
  }
}

/** Whether eval.problems was set by a flag or the --config file (not left at its default). */
function explicitProblems(overrides: Record<string, unknown>, file: unknown): boolean {
  const fromFlags = (overrides.eval as { problems?: unknown } | undefined)?.problems !== undefined;
  if (fromFlags || typeof file !== 'string') return fromFlags;
  const raw = readConfigFile(file).eval as { problems?: unknown } | undefined;
  return raw?.problems !== undefined;
}
