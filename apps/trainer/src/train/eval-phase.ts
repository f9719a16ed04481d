import { evaluate } from '../eval/evaluate.js';
import { evalOptionsOf } from '../eval/options.js';
import type { TrainContext } from './context.js';

/** Why a run or `agentrl eval` has nothing to evaluate, and what to do. */
export const NO_HELD_OUT =
  'no held-out problems: the split holds out task.heldOutSize problems, at most a fifth of the training rows ' +
  '(none of fewer than 5); give task.evalFiles, more training rows, or `agentrl eval --data FILE`';

/** Whether RL step `step` ends with an eval: every eval.everySteps, and always after the last step. */
export function evalDue(ctx: TrainContext, step: number): boolean {
  const every = ctx.cfg.eval.everySteps;
  return step === ctx.totalRl || (every > 0 && step % every === 0);
}

/** Evaluates the held-out problems (lead rank only), logs the summary as an `eval` record and a line. */
export async function evalPhase(ctx: TrainContext, step: number, stage: string): Promise<void> {
  if (!ctx.lead) return;
  if (ctx.heldOut.length === 0) {
    // An accuracy over no problems would read as 0.0 %: say why there is none instead.
    ctx.progress.log(`eval @ step ${step}: skipped, ${NO_HELD_OUT}`);
    return;
  }
  const r = await evaluate(ctx.factory, ctx.heldOut, ctx.env.verify, evalOptionsOf(ctx.cfg));
  const { perProblem: _, ...summary } = r;
  ctx.log.append({ phase: 'eval', step, stage, ...summary, wallSeconds: ctx.wall() });
  ctx.progress.log(
    `eval @ step ${step}: avg@${r.k} ${(r.accuracy * 100).toFixed(1)}%  pass@${r.k} ${(r.passAtK * 100).toFixed(1)}%  tool use ${(r.toolUseRate * 100).toFixed(0)}%`,
  );
}
