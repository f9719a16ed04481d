import { describe, expect, it } from 'vitest';
import { createModel, type Device, firstRunnableDevice, localRank } from '../src/index.js';
import { tinyModelConfig } from '../src/testing.js';

// Which GPU a model lands on: DeviceOptions.deviceIndex, by default the launcher's local rank
// modulo the GPUs visible (one rank per GPU under `mpirun -n <gpus>`).
const wanted = process.env.AGENTRL_GPU_TEST_DEVICE as Device | undefined;
const { device, reasons } = firstRunnableDevice(wanted ? [wanted] : ['cuda', 'rocm']);

describe('device index', () => {
  it('localRank reads Open MPI, MPICH, Slurm and torchrun variables, in that order', () => {
    expect(localRank({})).toBe(0);
    expect(localRank({ OMPI_COMM_WORLD_LOCAL_RANK: '3' })).toBe(3);
    expect(localRank({ MPI_LOCALRANKID: '2' })).toBe(2);
    expect(localRank({ SLURM_LOCALID: '5', LOCAL_RANK: '1' })).toBe(5);
    expect(localRank({ LOCAL_RANK: '7' })).toBe(7);
    expect(localRank({ OMPI_COMM_WORLD_LOCAL_RANK: 'x', LOCAL_RANK: '1' })).toBe(1);
  });

  it('a cpu model has no GPU index', () => {
    expect(createModel(tinyModelConfig(), { seed: 1 }).deviceIndex).toBe(-1);
  });

  it.skipIf(!device)(
    `a GPU model takes the index asked for, and refuses one out of range (${device ? `on ${device}` : `skipped, no GPU: ${reasons}`})`,
    () => {
      expect(createModel(tinyModelConfig(), { seed: 1, device, deviceIndex: 0 }).deviceIndex).toBe(0);
      expect(() => createModel(tinyModelConfig(), { seed: 1, device, deviceIndex: 1024 })).toThrow(
        /deviceIndex must be an integer in \[0, \d+\)/,
      );
    },
  );
});
