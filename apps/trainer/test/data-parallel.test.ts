import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mpirunMissing, runMpirun } from '@agentrl/parallel';
import { describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const missing = mpirunMissing();
if (missing) console.warn(`NativeTrainer data-parallel test skipped: ${missing}`);

interface Result {
  rank: number;
  size: number;
  sha256: string;
  metrics: Record<string, number>[];
}

async function mpirun(n: number): Promise<{ code: number | null; results: Result[]; stderr: string }> {
  const run = await runMpirun(
    n,
    [
      process.execPath,
      '--conditions=@agentrl/source',
      '--import',
      'tsx',
      join(here, 'fixtures/dp-policy-step.ts'),
    ],
    // two ranks on two cores: one thread each, and a rank waiting in a collective yields the core
    {
      cwd: join(here, '..'),
      env: { OMP_NUM_THREADS: '1', OMPI_MCA_mpi_yield_when_idle: '1' },
      timeoutMs: 120_000,
    },
  );
  const results = run.stdout
    .split('\n')
    .filter((l) => l.startsWith('RESULT '))
    .map((l) => JSON.parse(l.slice(7)) as Result);
  return { code: run.code, results, stderr: run.stderr };
}

describe.skipIf(missing !== undefined)('NativeTrainer under mpirun', () => {
  it('SFT and GRPO steps on 2 and 3 ranks give the weights and metrics of 1 rank, bit for bit', async () => {
    const runs = [];
    for (const n of [1, 2, 3]) {
      const r = await mpirun(n);
      expect(r.code, r.stderr).toBe(0);
      expect(r.results).toHaveLength(n);
      runs.push(...r.results);
    }
    const ref = runs[0]!;
    // 2 SFT steps, then 2 GRPO steps whose policy gradient is not zero
    expect(ref.metrics).toHaveLength(4);
    for (const m of ref.metrics) expect(m.gradNorm).toBeGreaterThan(0);
    expect(ref.metrics[2]!.trainTokens).toBeGreaterThan(0);
    for (const r of runs) {
      expect(r.sha256).toBe(ref.sha256);
      expect(r.metrics).toEqual(ref.metrics);
    }
  });
});
