import type { TrainConfig } from '../config/schema.js';
import type { Progress } from '../run/progress.js';
import type { RunDir } from '../run/run-dir.js';
import type { ProblemSplit } from '../task/problem.js';
import type { SftDemo } from '../task/sft-data.js';
import { createTrainContext } from './context.js';
import type { Environment } from './environment.js';
import { lastEval, writeRunReport } from './report-phase.js';
import { rlPhase } from './rl-loop.js';
import { sftPhase } from './sft-phase.js';
import type { TrainerState } from './state.js';

export interface TrainOptions {
  cfg: TrainConfig;
  run: RunDir;
  split: ProblemSplit;
  env: Environment;
  progress: Progress;
  /** Resume from the run directory's latest checkpoint (its weights are already in env.policy). */
  resumeState: TrainerState | null;
  /** Stop (resumably) after this many RL steps in total. */
  stopAfter?: number | undefined;
  /** SFT transcripts from `sft.files`; null = generate demonstrations (see loadSftSource). */
  sftDemos?: SftDemo[] | null;
}

export interface TrainResult {
  state: TrainerState;
  finalEval: { accuracy: number; passAtK: number } | null;
  stopped: boolean;
}

/**
 * The recipe as phases: setup (state, metrics log, rollouts), the SFT cold start (once), the
 * GRPO-RoC stages with their evals and checkpoints, the report. Each phase is its own module.
 */
export async function train(opts: TrainOptions): Promise<TrainResult> {
  const ctx = await createTrainContext(opts);
  if (!ctx.state.sftDone) await sftPhase(ctx, opts.sftDemos ?? null);
  const stopped = await rlPhase(ctx, opts.stopAfter);
  writeRunReport(ctx);
  return { state: ctx.state, stopped, finalEval: lastEval(ctx) };
}
