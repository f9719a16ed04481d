import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runMpirun } from '@agentrl/parallel';
import { REPO, TEST_DIR } from './cli.js';

/** `mpirun -n <n> agentrl <args>` from source: real ranks under Open MPI. */
export const mpirunTrain = (
  n: number,
  args: string[],
  onStart?: (pid: number) => void,
  timeoutMs = 400_000,
) =>
  runMpirun(
    n,
    [
      process.execPath,
      '--conditions=@agentrl/source',
      '--import',
      'tsx',
      join(REPO, 'apps/trainer/src/bin.ts'),
      ...args,
    ],
    // two ranks on two cores: one thread each, and a rank waiting in a collective yields the core
    {
      cwd: TEST_DIR,
      env: { OMP_NUM_THREADS: '1', OMPI_MCA_mpi_yield_when_idle: '1' },
      timeoutMs,
      ...(onStart ? { onStart } : {}),
    },
  );

/** sha256 of each RL checkpoint's model.safetensors in `<runs>/<name>`, by tag. */
export function checkpointHashes(runs: string, name: string): Record<string, string> {
  const dir = join(runs, name, 'checkpoints');
  const out: Record<string, string> = {};
  for (const tag of readdirSync(dir).filter((t) => t.startsWith('step-'))) {
    out[tag] = createHash('sha256')
      .update(readFileSync(join(dir, tag, 'model.safetensors')))
      .digest('hex');
  }
  return out;
}
