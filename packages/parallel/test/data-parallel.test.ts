import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalCommunicator, shardIndices, shardRange } from '../src/index.js';
import { FIXTURES, mpirunMissing, results, runMpi } from './mpirun.js';

const missing = mpirunMissing();

interface StepResult {
  rank: number;
  size: number;
  sha256: string;
  losses: number[];
}

/** The fixture as one plain process (no launcher: the local communicator). */
function runAlone(args: string[] = []): StepResult {
  const r = spawnSync(
    process.execPath,
    ['--conditions=@agentrl/source', '--import', 'tsx', resolve(FIXTURES, 'dp-step.ts'), ...args],
    { encoding: 'utf8', env: { ...process.env, OMP_NUM_THREADS: '1' } },
  );
  expect(r.status, r.stderr).toBe(0);
  const line = r.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  return JSON.parse(line!.slice(7)) as StepResult;
}

describe('shardIndices', () => {
  it('deals items round robin and covers each exactly once', () => {
    expect(shardIndices(5, { rank: 0, size: 2 })).toEqual([0, 2, 4]);
    expect(shardIndices(5, { rank: 1, size: 2 })).toEqual([1, 3]);
    expect(shardIndices(1, { rank: 2, size: 3 })).toEqual([]);
    expect(shardIndices(3, new LocalCommunicator())).toEqual([0, 1, 2]);
  });

  it('shardRange splits into contiguous blocks that cover each item once', () => {
    expect([0, 1, 2].map((rank) => shardRange(7, { rank, size: 3 }))).toEqual([
      [0, 3],
      [3, 5],
      [5, 7],
    ]);
    expect(shardRange(1, { rank: 1, size: 2 })).toEqual([1, 1]);
    expect(shardRange(4, new LocalCommunicator())).toEqual([0, 4]);
  });
});

describe.skipIf(missing !== undefined)('data-parallel steps of a tiny model (engine level)', () => {
  it('2 and 3 ranks end with weights bit-identical to 1 process on the same global batch', async () => {
    const alone = runAlone();
    // the plain path (float32 accumulation in the engine's buffer) is close but not bit-equal:
    // that is why GradientAllReduce accumulates in float64
    const plain = runAlone(['float32']);
    expect(plain.sha256).not.toBe(alone.sha256);
    for (const n of [2, 3]) {
      const run = await runMpi(n, 'dp-step.ts', [], { env: { OMP_NUM_THREADS: '1' } });
      expect(run.code, run.stderr).toBe(0);
      const rs = results<StepResult>(run);
      expect(rs).toHaveLength(n);
      for (const r of rs) {
        expect(r.size).toBe(n);
        expect(r.sha256).toBe(alone.sha256);
        expect(r.losses).toEqual(alone.losses);
      }
    }
  });
});
