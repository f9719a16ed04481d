import type { SftDemo } from '../task/sft-data.js';
import { createTrainContext, type SetupOptions } from './context.js';
import { lastEval, writeRunReport } from './report-phase.js';
import { rlPhase } from './rl-loop.js';
import { sftPhase } from './sft-phase.js';
import type { TrainerState } from './state.js';

export interface TrainOptions extends SetupOptions {
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
