import { createCommunicator } from '@agentrl/parallel';
import type { TrainConfig } from '../config/schema.js';
import { TrainerError } from '../errors.js';
import { MetricsLog } from '../run/metrics-log.js';
import type { Progress } from '../run/progress.js';
import type { RunDir } from '../run/run-dir.js';
import type { Problem, ProblemSplit } from '../task/problem.js';
import type { Environment } from './environment.js';
import type { TrainablePolicy } from './policy.js';
import { createRunRolloutFactory, type RolloutFactory } from './rollout-factory.js';
import { initialState, type TrainerState } from './state.js';

/** What every phase of a run reads: the config, the live parts, the state it advances, where it writes. */
export interface TrainContext {
  cfg: TrainConfig;
  run: RunDir;
  split: ProblemSplit;
  env: Environment;
  policy: TrainablePolicy;
  progress: Progress;
  /** Under mpirun every rank trains; rank 0 alone evaluates and writes metrics, checkpoints, the report. */
  lead: boolean;
  log: MetricsLog;
  /** Advanced in place by the phases; written into every checkpoint. */
  state: TrainerState;
  factory: RolloutFactory;
  /** The held-out problems evaluated (the first eval.problems). */
  heldOut: Problem[];
  /** RL steps over all stages. */
  totalRl: number;
  /** Wall seconds of the run so far, interrupted segments included. */
  wall(): number;
}

export interface SetupOptions {
  cfg: TrainConfig;
  run: RunDir;
  split: ProblemSplit;
  env: Environment;
  progress: Progress;
  /** Resume from the run directory's latest checkpoint (its weights are already in env.policy). */
  resumeState: TrainerState | null;
}

/** The setup phase: the trainable policy, the state (fresh or resumed), the metrics log and the rollout factory. */
export async function createTrainContext(opts: SetupOptions): Promise<TrainContext> {
  const { cfg, run, split, env, progress } = opts;
  const policy = env.policy;
  if (!policy)
    throw new TrainerError(
      'USAGE',
      'train: no trainable policy; --engine URL serves rollouts, training still needs the native engine',
    );
  const state = opts.resumeState ?? initialState(cfg.seed);
  const started = performance.now();
  const wallBefore = state.wallSeconds;
  return {
    cfg,
    run,
    split,
    env,
    policy,
    progress,
    lead: createCommunicator().rank === 0,
    log: new MetricsLog(run.metricsPath),
    state,
    factory: await createRunRolloutFactory(cfg, env),
    heldOut: split.heldOut.slice(0, cfg.eval.problems),
    totalRl: cfg.rl.stages.reduce((s, st) => s + st.steps, 0),
    wall: () => wallBefore + (performance.now() - started) / 1000,
  };
}
