import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createCommunicator } from '@agentrl/parallel';
import { hashSeed } from '@agentrl/protocol';
import { formatToolOutcome, wrapToolResponse } from '@agentrl/rollout';
import type { TrainConfig } from '../config/schema.js';
import { TrainerError } from '../errors.js';
import { evaluate } from '../eval/evaluate.js';
import { MetricsLog, type MetricsRecord } from '../run/metrics-log.js';
import type { Progress } from '../run/progress.js';
import { renderReport } from '../run/report.js';
import type { RunDir } from '../run/run-dir.js';
import type { Problem, ProblemSplit } from '../task/problem.js';
import { buildSftDemos, type SftDemo } from '../task/sft-data.js';
import { startCursor, takeIds } from './cursor.js';
import type { Environment } from './environment.js';
import { rewardModeOf } from './reward.js';
import { rlStep } from './rl-step.js';
import { createRunRolloutFactory } from './rollout-factory.js';
import { runSft, tokenizeDemo } from './sft.js';
import { initialState, readState, type TrainerState, writeState } from './state.js';

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

/** The recipe: SFT cold start, then GRPO-RoC stages; checkpoints, metrics and the report on the way. */
export async function train(opts: TrainOptions): Promise<TrainResult> {
  const { cfg, run, split, env, progress } = opts;
  const policy = env.policy;
  if (!policy)
    throw new TrainerError(
      'USAGE',
      'train: no trainable policy; --engine URL serves rollouts, training still needs the native engine',
    );
  // Under mpirun every rank trains; rank 0 alone evaluates and writes metrics, checkpoints, the report.
  const lead = createCommunicator().rank === 0;
  const log = new MetricsLog(run.metricsPath);
  const state = opts.resumeState ?? initialState(cfg.seed);
  const started = performance.now();
  const wallBefore = state.wallSeconds;
  const wall = () => wallBefore + (performance.now() - started) / 1000;
  const factory = await createRunRolloutFactory(cfg, env);
  const trainById = new Map(split.train.map((p) => [p.id, p]));
  const heldOut = split.heldOut.slice(0, cfg.eval.problems);
  const totalRl = cfg.rl.stages.reduce((s, st) => s + st.steps, 0);

  const doEval = async (step: number, stage: string) => {
    if (!lead) return;
    const r = await evaluate(factory, heldOut, env.verify, {
      k: cfg.eval.k,
      temperature: cfg.eval.temperature,
      maxResponseTokens: cfg.eval.maxResponseTokens,
      maxTurnTokens: cfg.rl.maxTurnTokens,
      seed: hashSeed(cfg.seed, 'eval'),
      systemPrompt: cfg.task.systemPrompt,
      rewardMode: rewardModeOf(cfg.task),
    });
    const { perProblem: _, ...summary } = r;
    log.append({ phase: 'eval', step, stage, ...summary, wallSeconds: wall() });
    progress.log(
      `eval @ step ${step}: avg@${r.k} ${(r.accuracy * 100).toFixed(1)}%  pass@${r.k} ${(r.passAtK * 100).toFixed(1)}%  tool use ${(r.toolUseRate * 100).toFixed(0)}%`,
    );
    return r;
  };
  const checkpoint = async (tag: string) => {
    if (!lead) return;
    state.wallSeconds = wall();
    await run.writeCheckpoint(tag, async (dir) => {
      await policy.save(dir);
      writeState(dir, state);
    });
  };
  const writeReport = () =>
    lead &&
    writeFileSync(
      run.reportPath,
      renderReport(`agentrl run ${cfg.name}`, [{ label: cfg.name, records: log.read(), config: cfg }]),
    );

  // ---- stage 0: SFT cold start ----------------------------------------------------------------
  if (!state.sftDone) {
    if (cfg.sft.enabled && cfg.sft.steps > 0) {
      const demos =
        opts.sftDemos ??
        (await buildSftDemos(split.train, {
          seed: cfg.seed,
          examples: cfg.sft.examples,
          mix: cfg.sft.mix,
          systemPrompt: cfg.task.systemPrompt,
          runTool: (code) => env.executor.run({ code, timeoutMs: cfg.executor.timeoutMs }),
          renderToolResponse: (o) => wrapToolResponse(formatToolOutcome(o, cfg.rl.toolResponseMaxChars)),
        }));
      if (lead) writeFileSync(run.sftDataPath, demos.map((d) => JSON.stringify(d)).join('\n') + '\n');
      const sequences = demos.map((d) =>
        tokenizeDemo(d, env.chatFormat, env.tokenizer, { maskDirectAnswer: cfg.sft.maskDirectAnswers }),
      );
      progress.start(cfg.sft.steps, state.sftStep, 'sft');
      await runSft({
        cfg,
        sequences,
        policy,
        firstStep: state.sftStep + 1,
        onStep: async (step, m) => {
          if (lead)
            log.append({
              phase: 'sft',
              step,
              stage: 'sft',
              loss: m.loss,
              gradNorm: m.gradNorm,
              lr: m.lr,
              tokens: m.tokens,
              timeTrain: m.seconds,
              wallSeconds: wall(),
            });
          progress.update(step, { loss: m.loss, lr: m.lr });
          state.sftStep = step;
          const every = cfg.sft.checkpointEvery;
          if (every > 0 && step % every === 0 && step < cfg.sft.steps) {
            await checkpoint(sftTag(step));
            if (lead) pruneSftCheckpoints(run, sftTag(step));
          }
        },
      });
      progress.stop();
    }
    await env.syncWeights(0);
    await doEval(0, 'sft');
    state.sftDone = true;
    await checkpoint('step-000000');
    if (lead) pruneSftCheckpoints(run, null);
    writeReport();
  }

  // ---- GRPO-RoC stages ------------------------------------------------------------------------
  policy.startRl();
  // A resumed run's servers hold whatever they last loaded: send them the checkpoint's weights.
  await env.syncWeights(state.rlStep);
  let stopped = false;
  progress.start(totalRl, state.rlStep, 'rl');
  while (state.stageIndex < cfg.rl.stages.length) {
    const stage = cfg.rl.stages[state.stageIndex]!;
    if (state.stepInStage >= stage.steps) {
      state.stageIndex++;
      state.stepInStage = 0;
      state.cursor = null;
      continue;
    }
    if (opts.stopAfter !== undefined && state.rlStep >= opts.stopAfter) {
      stopped = true;
      break;
    }
    if (!state.cursor || state.cursor.stage !== stage.name) {
      const solved = new Set(state.solvedAll);
      const pool = stage.hardOnly ? split.train.map((p) => p.id).filter((id) => !solved.has(id)) : null;
      state.cursor = startCursor(stage.name, pool && pool.length > 0 ? pool : null);
      if (stage.hardOnly)
        progress.log(
          `stage ${stage.name}: ${pool?.length ?? 0} of ${split.train.length} problems not yet solved by every sample`,
        );
    }
    const take = takeIds(
      state.cursor,
      split.train.map((p) => p.id),
      cfg.rl.promptsPerStep,
      cfg.seed,
    );
    state.cursor = take.cursor;
    const problems: Problem[] = take.ids.map((id) => trainById.get(id)!);
    const step = state.rlStep + 1;
    const out = await rlStep({
      cfg,
      step,
      maxResponseTokens: stage.maxResponseTokens,
      problems,
      factory,
      policy,
      verify: env.verify,
      remote: env.remote,
    });
    await env.syncWeights(step);
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
      wallSeconds: wall(),
    };
    if (lead) log.append(record);
    progress.update(step, {
      stage: stage.name,
      reward: out.metrics.reward!,
      len: Math.round(out.metrics.responseLength!),
      tools: out.metrics.toolCallsPerTrajectory!,
      kl: out.metrics.approxKl!,
    });
    if (cfg.eval.everySteps > 0 && step % cfg.eval.everySteps === 0 && step < totalRl) {
      await doEval(step, stage.name);
    }
    if (step === totalRl) {
      await doEval(step, stage.name);
    }
    if ((cfg.checkpointEvery > 0 && step % cfg.checkpointEvery === 0) || step === totalRl) {
      await checkpoint(`step-${String(step).padStart(6, '0')}`);
      writeReport();
    }
  }
  progress.stop();
  writeReport();
  const evals = (lead ? log.read() : []).filter((r) => r.phase === 'eval');
  const last = evals[evals.length - 1];
  return {
    state,
    stopped,
    finalEval: last ? { accuracy: last.accuracy as number, passAtK: last.passAtK as number } : null,
  };
}

const SFT_TAG = /^sft-\d{6}$/;
const sftTag = (step: number) => `sft-${String(step).padStart(6, '0')}`;

/** Removes the SFT checkpoints other than `keep` (they are only resume points of SFT itself). */
function pruneSftCheckpoints(run: RunDir, keep: string | null): void {
  if (!existsSync(run.checkpointsDir)) return;
  for (const tag of readdirSync(run.checkpointsDir)) {
    if (SFT_TAG.test(tag) && tag !== keep) rmSync(run.checkpointDir(tag), { recursive: true, force: true });
  }
}

/**
 * Loads the trainer state of a run's latest checkpoint and trims metrics.jsonl to it. A run killed
 * during SFT before its first checkpoint has none: its metrics are cleared and SFT restarts (null).
 */
export function prepareResume(
  run: RunDir,
  opts: { truncate?: boolean } = {},
): { state: TrainerState; checkpointDir: string } | null {
  // Ranks other than the lead of a data-parallel job read the state and leave the metrics alone.
  const log = opts.truncate === false ? null : new MetricsLog(run.metricsPath);
  const tag = run.latestCheckpoint();
  if (!tag) {
    log?.truncateTo(() => false);
    return null;
  }
  const dir = run.checkpointDir(tag);
  const state = readState(dir);
  log?.truncateTo((r) =>
    state.sftDone
      ? r.phase === 'sft' || r.step <= state.rlStep
      : r.phase === 'sft' && r.step <= state.sftStep,
  );
  return { state, checkpointDir: dir };
}
