import { describe, expect, it } from 'vitest';
import { allReduceSeconds, type StepTimeConfig, simulateStepTime } from './step-time.js';
import type { TrajectorySpec } from './workload.js';

const config: StepTimeConfig = {
  rolloutGpus: 1,
  trainGpus: 1,
  gpusPerNode: 8,
  // 10 ms per decode step whatever the batch: one token per sequence per 10 ms
  engine: {
    kvCapacityTokens: 1e6,
    maxRunning: 64,
    stepBaseMs: 10,
    stepPerSeqMs: 0,
    stepPerKvTokenMs: 0,
    prefillPerTokenMs: 0,
  },
  overcommit: 4,
  maxResponseTokens: 1000,
  toolWorkers: 1,
  toolDispatchSeconds: 0,
  keptFraction: 0.5,
  parameters: 1e9,
  flopsPerTokenPerParameter: 8,
  peakFlops: 1e15,
  mfu: 0.5,
  gradientBytes: 2,
  intraNodeBytesPerSecond: 100e9,
  interNodeBytesPerSecond: 10e9,
  weightSyncSeconds: 2,
  partialRolloutFraction: 0.5,
};

// two trajectories: 100 tokens, a 3 s tool call, 100 tokens
const workload: TrajectorySpec[] = [0, 1].map(() => ({
  promptTokens: 50,
  turns: [
    { generate: 100, tool: { seconds: 3, responseTokens: 10 } },
    { generate: 100, tool: null },
  ],
}));

describe('step time', () => {
  it('queues tool calls on the worker pool and adds training, all-reduce and sync', async () => {
    const r = await simulateStepTime(config, workload);
    expect(r.toolCalls).toBe(2);
    // 1 s decode, then the two tool calls run one after the other on one worker: 3 s and 6 s,
    // then 1 s decode each: the second trajectory ends at 8 s
    expect(r.rolloutSeconds).toBeCloseTo(8, 1);
    expect(r.toolExposedSeconds).toBeCloseTo(6, 1);
    expect(r.meanToolQueueSeconds).toBeCloseTo(1.5, 1);
    expect(r.partialRolloutSeconds).toBeCloseTo(5, 1);
    // 1 of 2 trajectories trained, 260 tokens of context: 8 * 1e9 * 260 / (1e15 * 0.5)
    expect(r.trainedTokens).toBe(260);
    expect(r.trainComputeSeconds).toBeCloseTo((8 * 1e9 * 260) / 5e14, 9);
    expect(r.gradientAllReduceSeconds).toBe(0);
    expect(r.synchronousStepSeconds).toBeCloseTo(8 + r.trainComputeSeconds + 2, 1);
    const twoWorkers = await simulateStepTime({ ...config, toolWorkers: 2 }, workload);
    expect(twoWorkers.rolloutSeconds).toBeCloseTo(5, 1);
    expect(twoWorkers.meanToolQueueSeconds).toBe(0);
  });

  it('models the all-reduce as a ring in the node and a ring over the NICs between nodes', () => {
    const bytes = 8e9;
    expect(allReduceSeconds(bytes, 1, config)).toBe(0);
    expect(allReduceSeconds(bytes, 8, config)).toBeCloseTo((2 * 7 * bytes) / 8 / 100e9, 9);
    // 4 nodes: in-node ring, then each GPU's 1/8 shard around 4 nodes at 10 GB/s
    expect(allReduceSeconds(bytes, 32, config)).toBeCloseTo(
      (2 * 7 * bytes) / 8 / 100e9 + (2 * 3 * (bytes / 8)) / 4 / 10e9,
      9,
    );
  });
});
