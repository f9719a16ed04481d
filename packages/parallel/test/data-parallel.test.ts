import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalCommunicator, shardIndices, shardRange } from '../src/index.js';
import { FIXTURES, mpirunMissing, results, runMpi } from './mpirun.js';

const missing = mpirunMissing();

interface StepResult {
  rank: number;
  size: number;
  sha256: string;
  losses: number[];
  started: number;
}

/** The fixture as one plain process (no launcher: the local communicator, the engine's own float32 accumulation). */
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

const weights = (path: string) => {
  const b = readFileSync(path);
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
};

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
  it('1, 2 and 3 MPI ranks end with bit-identical weights; the plain process within 1e-6 of them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentrl-dp-'));
    try {
      const byN: StepResult[] = [];
      for (const n of [1, 2, 3]) {
        const run = await runMpi(n, 'dp-step.ts', [join(dir, `w${n}.bin`)], {
          env: { OMP_NUM_THREADS: '1' },
        });
        expect(run.code, run.stderr).toBe(0);
        const rs = results<StepResult>(run);
        expect(rs).toHaveLength(n);
        for (const r of rs) expect(r.size).toBe(n);
        byN.push(...rs);
      }
      const ref = byN[0]!;
      for (const r of byN) {
        expect(r.sha256).toBe(ref.sha256);
        expect(r.losses).toEqual(ref.losses);
      }
      // the default overlapped reduce: the tiny model is one bucket, started by the embedding's stage
      for (const r of byN.slice(1)) expect(r.started).toBe(3);
      // Buckets of 2 KiB (many per layer, started while the backward runs) and the blocking reduce
      // change nothing in the sums: the same bits
      for (const mode of ['2048', 'blocking']) {
        const run = await runMpi(2, 'dp-step.ts', ['', mode], { env: { OMP_NUM_THREADS: '1' } });
        expect(run.code, run.stderr).toBe(0);
        const rs = results<StepResult>(run);
        for (const r of rs) {
          expect(r.sha256).toBe(ref.sha256);
          expect(r.losses).toEqual(ref.losses);
          if (mode === 'blocking') expect(r.started).toBe(0);
          else expect(r.started).toBeGreaterThan(3 * 10);
        }
      }
      // 2 micro-batches on 3 ranks: rank 2 has none and still takes part in every bucket
      const two: StepResult[] = [];
      for (const n of [1, 3]) {
        const run = await runMpi(n, 'dp-step.ts', ['', '2048', '2'], { env: { OMP_NUM_THREADS: '1' } });
        expect(run.code, run.stderr).toBe(0);
        two.push(...results<StepResult>(run));
      }
      expect(two).toHaveLength(4);
      for (const r of two) expect(r.sha256).toBe(two[0]!.sha256);
      expect(two[0]!.sha256).not.toBe(ref.sha256);
      // The plain path sums float32 gradients as they arrive: other last bits, a tiny difference
      const alone = runAlone([join(dir, 'plain.bin')]);
      expect(alone.sha256).not.toBe(ref.sha256);
      const a = weights(join(dir, 'plain.bin'));
      const b = weights(join(dir, 'w2.bin'));
      let maxDiff = 0;
      for (let i = 0; i < a.length; i++)
        maxDiff = Math.max(maxDiff, Math.abs((a[i] as number) - (b[i] as number)));
      expect(maxDiff).toBeGreaterThan(0);
      expect(maxDiff).toBeLessThan(1e-6);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
