import type { Scheduler } from '@agentrl/rollout';
import { createKvAwareScheduler } from '../kv-aware-scheduler.js';
import { createSimClock } from './sim-clock.js';
import { createSimEngine, type SimEngine, type SimEngineConfig } from './sim-engine.js';
import { playTrajectory, type TrajectorySpec } from './workload.js';

/**
 * One whole RL step of a data-parallel run in simulated time: rollouts on the simulator's engine
 * model (continuous batching, bounded KV cache, the real KV-aware scheduler) with tool calls queued
 * on a bounded pool of executor workers, then the training compute, the gradient all-reduce and the
 * weight sync from closed-form costs. Every figure is an assumption stated in BENCHMARKS.md.
 */
export interface StepTimeConfig {
  /** GPUs running inference engines during the rollout (one engine each). */
  rolloutGpus: number;
  /** GPUs training (data-parallel ranks). Colocated: the same GPUs as rolloutGpus, in turn. */
  trainGpus: number;
  gpusPerNode: number;
  engine: SimEngineConfig;
  /** KV-aware scheduler overcommit (see simulate.ts). */
  overcommit: number;
  maxResponseTokens: number;
  /** Executor worker processes serving tool calls (all nodes' CPUs together). */
  toolWorkers: number;
  /** Per tool call: front end + Redis round trips before and after the run (seconds). */
  toolDispatchSeconds: number;
  /** Fraction of the sampled trajectories the update trains on (RoC keeps 16 of 32). */
  keptFraction: number;
  parameters: number;
  /** Training FLOPs per trained token, in units of parameters (6 for forward+backward, +2 for the old-logprob forward). */
  flopsPerTokenPerParameter: number;
  /** Dense bf16 peak of one GPU (FLOP/s) and the fraction of it training reaches. */
  peakFlops: number;
  mfu: number;
  /** Bytes per gradient element on the wire (2 = bf16). */
  gradientBytes: number;
  /** All-reduce bus bandwidth inside a node, per GPU (bytes/s). */
  intraNodeBytesPerSecond: number;
  /** Network bandwidth per GPU between nodes (one NIC each, bytes/s). */
  interNodeBytesPerSecond: number;
  /** Seconds to move new weights into the engines after the update. */
  weightSyncSeconds: number;
  /** Partial rollouts: the step ends when this fraction of trajectories has finished (1 = all). */
  partialRolloutFraction: number;
}

export interface StepTimeResult {
  rolloutGpus: number;
  trainGpus: number;
  trajectories: number;
  toolCalls: number;
  /** Rollout makespan (all trajectories finished). */
  rolloutSeconds: number;
  /** Of the rollout, the part the tool calls add (makespan minus the makespan with instant tools). */
  toolExposedSeconds: number;
  /** Mean seconds a tool call waited for a free worker. */
  meanToolQueueSeconds: number;
  /** Seconds until `partialRolloutFraction` of the trajectories had finished. */
  partialRolloutSeconds: number;
  trainedTokens: number;
  trainComputeSeconds: number;
  gradientAllReduceSeconds: number;
  weightSyncSeconds: number;
  /** Rollout, then training, then sync (colocated, synchronous). */
  synchronousStepSeconds: number;
}

interface RolloutRun {
  makespan: number;
  endTimes: number[];
  toolCalls: number;
  toolQueueSeconds: number;
  generatedTokens: number;
  contextTokens: number[];
}

/** A FIFO pool of `n` workers in simulated time. */
function workerPool(n: number) {
  let free = n;
  const waiting: (() => void)[] = [];
  return {
    async acquire(): Promise<void> {
      if (free > 0) {
        free--;
        return;
      }
      await new Promise<void>((resolve) => waiting.push(resolve));
    },
    release(): void {
      const next = waiting.shift();
      if (next) next();
      else free++;
    },
  };
}

async function rollout(
  config: StepTimeConfig,
  workload: readonly TrajectorySpec[],
  toolsInstant: boolean,
): Promise<RolloutRun> {
  const clock = createSimClock();
  const engines = Array.from({ length: config.rolloutGpus }, () => createSimEngine(clock, config.engine));
  const scheduler: Scheduler<SimEngine> = createKvAwareScheduler(
    engines.map((engine) => ({ engine, capacityTokens: engine.config.kvCapacityTokens })),
    { overcommit: config.overcommit },
  );
  const pool = workerPool(config.toolWorkers);
  const run: RolloutRun = {
    makespan: 0,
    endTimes: [],
    toolCalls: 0,
    toolQueueSeconds: 0,
    generatedTokens: 0,
    contextTokens: [],
  };
  const runOne = async (spec: TrajectorySpec) => {
    const lease = await scheduler.acquire(spec.promptTokens + config.maxResponseTokens);
    try {
      const context = await playTrajectory(
        lease.engine,
        spec,
        async (call) => {
          run.toolCalls++;
          if (toolsInstant) return;
          const asked = clock.now();
          await pool.acquire();
          run.toolQueueSeconds += clock.now() - asked;
          await clock.sleep(call.seconds + config.toolDispatchSeconds);
          pool.release();
        },
        (tokens) => {
          run.generatedTokens += tokens;
        },
      );
      run.contextTokens.push(context);
    } finally {
      lease.release();
    }
    run.endTimes.push(clock.now());
  };
  await clock.run(() => Promise.all(workload.map(runOne)));
  run.makespan = clock.now();
  for (const e of engines) e.finish();
  return run;
}

/** Ring all-reduce inside a node; across nodes, reduce-scatter in the node, a ring over the NICs, all-gather. */
export function allReduceSeconds(bytes: number, gpus: number, config: StepTimeConfig): number {
  if (gpus <= 1) return 0;
  const perNode = Math.min(gpus, config.gpusPerNode);
  const nodes = Math.ceil(gpus / config.gpusPerNode);
  const intra = perNode > 1 ? (2 * (perNode - 1) * bytes) / perNode / config.intraNodeBytesPerSecond : 0;
  if (nodes === 1) return intra;
  const shard = bytes / perNode;
  const inter = (2 * (nodes - 1) * shard) / nodes / config.interNodeBytesPerSecond;
  return intra + inter;
}

export async function simulateStepTime(
  config: StepTimeConfig,
  workload: readonly TrajectorySpec[],
): Promise<StepTimeResult> {
  const withTools = await rollout(config, workload, false);
  const instant = await rollout(config, workload, true);
  const sortedEnds = [...withTools.endTimes].sort((a, b) => a - b);
  const cut = Math.max(0, Math.ceil(config.partialRolloutFraction * sortedEnds.length) - 1);
  const meanContext = withTools.contextTokens.reduce((a, b) => a + b, 0) / withTools.contextTokens.length;
  const trainedTokens = config.keptFraction * workload.length * meanContext;
  const trainComputeSeconds =
    (config.flopsPerTokenPerParameter * config.parameters * trainedTokens) /
    (config.trainGpus * config.peakFlops * config.mfu);
  const gradientAllReduceSeconds = allReduceSeconds(
    config.parameters * config.gradientBytes,
    config.trainGpus,
    config,
  );
  return {
    rolloutGpus: config.rolloutGpus,
    trainGpus: config.trainGpus,
    trajectories: workload.length,
    toolCalls: withTools.toolCalls,
    rolloutSeconds: withTools.makespan,
    toolExposedSeconds: withTools.makespan - instant.makespan,
    meanToolQueueSeconds: withTools.toolCalls ? withTools.toolQueueSeconds / withTools.toolCalls : 0,
    partialRolloutSeconds: sortedEnds[cut] ?? 0,
    trainedTokens,
    trainComputeSeconds,
    gradientAllReduceSeconds,
    weightSyncSeconds: config.weightSyncSeconds,
    synchronousStepSeconds:
      withTools.makespan + trainComputeSeconds + gradientAllReduceSeconds + config.weightSyncSeconds,
  };
}
