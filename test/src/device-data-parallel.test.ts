import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Device, firstRunnableDevice } from '@agentrl/engine';
import { mpirunMissing, probeNccl } from '@agentrl/parallel';
import { withoutTiming } from 'agentrl';
import { afterAll, describe, expect, it } from 'vitest';
import { readJsonl } from './cli.js';
import { checkpointHashes, mpirunTrain } from './mpi-train.js';

/**
 * `mpirun -n 2 agentrl train --device <gpu>` against `mpirun -n 1`: GPU ranks whose gradients are
 * all-reduced on the device through NCCL / RCCL (float64, exact) end with bit-identical checkpoints
 * and equal metrics. Runs on a machine with two GPUs and NCCL (AGENTRL_DP_MULTI_GPU=1, set by
 * scripts/gpu-check.sh), or without a GPU under `HIP_CPU_DP=1 scripts/hip-cpu-check.sh` (HIP-CPU's
 * kernels and a stand-in RCCL over MPI, AGENTRL_DP_SHARED_DEVICE=1); listed as skipped elsewhere.
 */
const wanted = process.env.AGENTRL_GPU_TEST_DEVICE as Device | undefined;
const { device, reasons } = firstRunnableDevice(wanted ? [wanted] : ['cuda', 'rocm']);
const nccl = probeNccl();
const twoRanks = process.env.AGENTRL_DP_SHARED_DEVICE === '1' || process.env.AGENTRL_DP_MULTI_GPU === '1';
const why = !device
  ? `no GPU: ${reasons}`
  : !nccl.available
    ? `NCCL/RCCL ${nccl.detail}`
    : !twoRanks
      ? 'one GPU (NCCL puts one rank on each GPU)'
      : mpirunMissing();
const runs = mkdtempSync(join(tmpdir(), 'agentrl-gpu-dp-'));
afterAll(() => rmSync(runs, { recursive: true, force: true }));

// a short smoke run: 4 SFT steps and one RL step, small micro-batches so both ranks train
const train = (n: number, name: string) =>
  mpirunTrain(
    n,
    [
      ...['train', '--preset', 'smoke', '--device', device ?? 'cuda', '--runsDir', runs, '--name', name],
      ...['--no-progress', '--rl.microBatchTokens', '400', '--sft.steps', '4', '--checkpointEvery', '1'],
      ...['--rl.stages', '[{"name":"s1","steps":1,"maxResponseTokens":24}]', '--rl.promptsPerStep', '2'],
      ...['--rl.n', '4', '--eval.problems', '1', '--eval.maxResponseTokens', '16'],
    ],
    undefined,
    900_000,
  );

describe.skipIf(why !== undefined)(
  `agentrl train with GPU ranks (${why ? `skipped, ${why}` : `on ${device}, ${nccl.detail}`})`,
  () => {
    it('2 GPU ranks end with the checkpoints and metrics of 1, bit for bit', async () => {
      const one = await train(1, 'g1');
      expect(one.code, one.stderr).toBe(0);
      const two = await train(2, 'g2');
      expect(two.code, two.stderr).toBe(0);
      expect(checkpointHashes(runs, 'g2')).toEqual(checkpointHashes(runs, 'g1'));
      const m1 = readJsonl(join(runs, 'g1', 'metrics.jsonl'));
      const m2 = readJsonl(join(runs, 'g2', 'metrics.jsonl'));
      expect(m2.map(withoutTiming)).toEqual(m1.map(withoutTiming));
      // the SFT steps trained (through the device reduce)
      const sft = m1.filter((r) => r.phase === 'sft');
      expect(sft).toHaveLength(4);
      for (const r of sft) expect(r.gradNorm as number).toBeGreaterThan(0);
      expect(sft.at(-1)!.loss as number).toBeLessThan(sft[0]!.loss as number);
    }, 1_900_000);
  },
);
