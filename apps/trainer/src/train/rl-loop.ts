import type { RlStage } from '../config/schema.js';
import type { MetricsRecord } from '../run/metrics-log.js';
import type { Problem } from '../task/problem.js';
import { checkpointDue, stepTag, writeCheckpoint } from './checkpoints.js';
import type { TrainContext } from './context.js';
import { startCursor, takeIds } from './cursor.js';
import { evalDue, evalPhase } from './eval-phase.js';
import { writeRunReport } from './report-phase.js';
import { type RlStepOutput, rlStep } from './rl-step.js';

/**
 * The GRPO-RoC stages: step after step (rollout → reward/RoC → update → log), evals and
 * checkpoints on their schedule, until the last stage ends or `stopAfter` RL steps are done.
 * Returns whether it stopped early (resumably).
 */
export async function rlPhase(ctx: TrainContext, stopAfter?: number): Promise<boolean> {
  const { cfg, state, policy, env, progress } = ctx;
  policy.startRl();
  // A resumed run's servers hold whatever they last loaded: send them the checkpoint's weights.
  await env.syncWeights(state.rlStep);
  let stopped = false;
  progress.start(ctx.totalRl, state.rlStep, 'rl');
  for (let stage = currentStage(ctx); stage; stage = currentStage(ctx)) {
    if (stopAfter !== undefined && state.rlStep >= stopAfter) {
      stopped = true;
      break;
    }
    const step = state.rlStep + 1;
    const out = await rlStep({
      cfg,
      step,
      maxResponseTokens: stage.maxResponseTokens,
      problems: nextBatch(ctx, stage),
      factory: ctx.factory,
      policy,
      verify: env.verify,
      remote: env.remote,
    });
    await env.syncWeights(step);
    recordStep(ctx, stage, step, out);
    if (evalDue(ctx, step)) await evalPhase(ctx, step, stage.name);
    if (checkpointDue(ctx, step)) {
      await writeCheckpoint(ctx, stepTag(step));
      writeRunReport(ctx);
    }
  }
  progress.stop();
  return stopped;
}

/** The stage the next step belongs to, moving past finished ones (and resetting the cursor); null at the end. */
function currentStage(ctx: TrainContext): RlStage | null {
  const { state, cfg } = ctx;
  while (state.stageIndex < cfg.rl.stages.length) {
    const stage = cfg.rl.stages[state.stageIndex]!;
    if (state.stepInStage < stage.steps) return stage;
    state.stageIndex++;
    state.stepInStage = 0;
    state.cursor = null;
  }
  return null;
}

/** The step's prompts from the stage's cursor; a hardOnly stage starts on the problems not yet solved by every sample. */
function nextBatch(ctx: TrainContext, stage: RlStage): Problem[] {
  const { state, split, cfg } = ctx;
  if (!state.cursor || state.cursor.stage !== stage.name) {
    const solved = new Set(state.solvedAll);
    const pool = stage.hardOnly ? split.train.map((p) => p.id).filter((id) => !solved.has(id)) : null;
    state.cursor = startCursor(stage.name, pool && pool.length > 0 ? pool : null);
    if (stage.hardOnly)
      ctx.progress.log(
        `stage ${stage.name}: ${pool?.length ?? 0} of ${split.train.length} problems not yet solved by every sample`,
      );
    const available = state.cursor.pool?.length ?? split.train.length;
    if (available < cfg.rl.promptsPerStep)
      ctx.progress.log(
        `stage ${stage.name}: ${available} problems to draw from, fewer than rl.promptsPerStep (${cfg.rl.promptsPerStep}); each step takes all ${available} once (add rows or lower --rl.promptsPerStep to silence this)`,
      );
  }
  const ids = split.train.map((p) => p.id);
  const take = takeIds(state.cursor, ids, cfg.rl.promptsPerStep, cfg.seed);
  state.cursor = take.cursor;
  const byId = new Map(split.train.map((p) => [p.id, p]));
  return take.ids.map((id) => byId.get(id)!);
}

/** Advances the state past `step` and logs it: the solved set, the counters, metrics.jsonl, the progress line. */
function recordStep(ctx: TrainContext, stage: RlStage, step: number, out: RlStepOutput): void {
  const { state } = ctx;
  const solved = new Set(state.solvedAll);
  for (const id of out.solvedAll) solved.add(id);
  for (const id of out.notSolvedAll) solved.delete(id);
  state.solvedAll = [...solved].sort();
  state.rlStep = step;
  state.stepInStage++;
  const record: MetricsRecord = {
    phase: 'rl',
    step,
    stage: stage.name,
    maxResponseTokens: stage.maxResponseTokens,
    ...out.metrics,
    wallSeconds: ctx.wall(),
  };
  if (ctx.lead) ctx.log.append(record);
  ctx.progress.update(step, {
    stage: stage.name,
    reward: out.metrics.reward!,
    len: Math.round(out.metrics.responseLength!),
    tools: out.metrics.toolCallsPerTrajectory!,
    kl: out.metrics.approxKl ?? 'no update',
  });
}
