import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  createCommunicator,
  DistErrorCode,
  LocalCommunicator,
  launchedWorldSize,
  probeMpi,
} from '../src/index.js';
import { mpirunMissing, results, runMpi } from './mpirun.js';

const missing = mpirunMissing();
if (missing) console.warn(`@agentrl/parallel: skipping mpirun tests: ${missing}`);

interface CollectivesResult {
  rank: number;
  size: number;
  backend: string;
  f32: number[];
  f64: number[];
  bytes: number[];
  gathered: number[];
  json: { rank: number; tokens: number; name: string }[];
  config: { steps: number; preset: string };
  part: number[];
  typed: { r: number; ids: (string | number)[]; lp: string[] };
  asyncOk: boolean;
  overlaps: boolean;
  afterBarrier: number[];
  nonFinite: string[][];
  errors: Record<string, string>;
}

describe('single process', () => {
  it('is a local communicator when no launcher variables are set', () => {
    expect(launchedWorldSize({})).toBeUndefined();
    expect(launchedWorldSize({ OMPI_COMM_WORLD_SIZE: '4' })).toBe(4);
    expect(launchedWorldSize({ PMI_SIZE: '2' })).toBe(2);
    const comm = createCommunicator({ env: {} });
    expect(comm).toBeInstanceOf(LocalCommunicator);
    const g = new Float32Array([1, 2]);
    comm.allreduceSum(g);
    expect(Array.from(g)).toEqual([1, 2]);
    expect(Array.from(comm.allgather(new Uint8Array([5])))).toEqual([5]);
    expect(() => comm.broadcast(new Uint8Array(1), 1)).toThrow(/root must be an integer rank in \[0, 0\]/);
    expect(() => comm.allreduceSum([1] as unknown as Float32Array)).toThrow(
      expect.objectContaining({ code: DistErrorCode.INVALID_ARGUMENT }),
    );
  });

  it('probes MPI without initialising it', () => {
    const p = probeMpi();
    expect(p.initialized).toBe(false);
    if (p.available) expect(p.implementation).toBe('openmpi');
    else expect(p.detail).toMatch(/install|not Open MPI|lacks/);
  });
});

/** createCommunicator() in a fresh process that looks launched (world size 2) with this MPI library. */
function underFakeLauncher(library: string): string {
  const r = spawnSync(
    process.execPath,
    [
      '--conditions=@agentrl/source',
      '--import',
      'tsx',
      '-e',
      "import('./src/index.ts').then((m) => { try { m.createCommunicator(); console.log('created'); } catch (e) { console.log(e.code + ' ' + e.message); } })",
    ],
    { encoding: 'utf8', env: { ...process.env, OMPI_COMM_WORLD_SIZE: '2', AGENTRL_MPI_LIBRARY: library } },
  );
  return r.stdout.trim();
}

describe('launched without a usable Open MPI', () => {
  it('stops with the reason instead of training N independent copies', () => {
    expect(underFakeLauncher('/nonexistent/libmpi.so.40')).toMatch(
      /^DIST_UNAVAILABLE dist: launched by an MPI launcher \(world size 2\) but MPI cannot be used: no MPI library found \(.*\/nonexistent\/libmpi\.so\.40.*install Open MPI/,
    );
    // a library that loads but is not Open MPI (MPICH's libmpi.so.12 takes this path too)
    expect(underFakeLauncher('libm.so.6')).toMatch(
      /^DIST_UNAVAILABLE .*libm\.so\.6 is not Open MPI \(unknown\): this binding speaks Open MPI's ABI only/,
    );
  });
});

describe.skipIf(missing !== undefined)('mpirun -n 2 (real processes)', () => {
  it('all-reduces (blocking and on the comm thread), broadcasts, scatters and all-gathers exactly, and refuses bad arguments on both layers', async () => {
    const run = await runMpi(2, 'collectives.ts');
    expect(run.code, run.stderr).toBe(0);
    const rs = results<CollectivesResult>(run);
    expect(rs).toHaveLength(2);
    for (const r of rs) {
      expect(r.size).toBe(2);
      expect(r.backend).toBe('mpi');
      // (1 + 2) * i * 0.5
      expect(r.f32).toEqual([0, 1.5, 3, 4.5, 6, 999 * 1.5]);
      expect(r.f64).toEqual([0.25 + 1.25, -1, 1e300]);
      expect(r.bytes).toEqual([1, 2, 3, 0]);
      expect(r.gathered).toEqual([0, 0, 255, 1, 2, 255]);
      expect(r.json).toEqual([
        { rank: 0, tokens: 7, name: '' },
        { rank: 1, tokens: 1007, name: 'xxxxx' },
      ]);
      expect(r.config).toEqual({ steps: 3, preset: 'smoke' });
      expect(r.part).toEqual(new Array(r.rank + 2).fill(10 * r.rank));
      expect(r.typed).toEqual({
        r: r.rank,
        ids: ['Int32Array', r.rank, -r.rank || 0, 2 ** 30],
        lp: ['Float32Array', String(-0.5 * r.rank || 0), '-Infinity'],
      });
      // Open MPI 4.1 provides MPI_THREAD_SERIALIZED: the buckets ran on the comm thread
      expect(r.overlaps).toBe(true);
      expect(r.asyncOk).toBe(true);
      expect(r.afterBarrier).toEqual([0, 1]);
      if (r.rank === 0)
        expect(r.errors.tsScatterParts).toMatch(
          /^DIST_INVALID_ARGUMENT: .*one Uint8Array per rank \(2\), got 1 items/,
        );
      expect(r.errors.tsStartF32).toMatch(/^DIST_INVALID_ARGUMENT: .*allreduceSumStart takes a Float64Array/);
      expect(r.errors.nativeScatterCounts).toMatch(
        /^DIST_INVALID_ARGUMENT: mpi: counts has 3 elements, expected 2/,
      );
      expect(r.errors.nativeAsyncDtype).toMatch(/^DIST_INVALID_ARGUMENT: mpi: buffer has the wrong dtype/);
      expect(r.errors.nativeWaitTicket).toMatch(
        /^DIST_INVALID_ARGUMENT: mpi: ticket must be an integer in \[1, 3\]/,
      );
      expect(r.nonFinite).toEqual([
        ['-Infinity', 'NaN', '0'],
        ['-Infinity', 'NaN', '1'],
      ]);
      expect(r.errors.tsInt32).toMatch(/^DIST_INVALID_ARGUMENT: .*Float32Array or a Float64Array/);
      expect(r.errors.tsRoot).toMatch(
        /^DIST_INVALID_ARGUMENT: .*root must be an integer rank in \[0, 1\], got 2/,
      );
      expect(r.errors.nativeInt32).toMatch(/^DIST_INVALID_ARGUMENT: mpi: buffer has the wrong dtype/);
      expect(r.errors.nativeNotArray).toMatch(/^DIST_INVALID_ARGUMENT: mpi: buffer must be a typed array/);
      expect(r.errors.nativeRoot).toMatch(/^DIST_INVALID_ARGUMENT: mpi: root must be an integer in \[0, 1\]/);
      expect(r.errors.nativeRootRange).toMatch(
        /^DIST_INVALID_ARGUMENT: mpi: root must be an integer in \[0, 1\]/,
      );
      expect(r.errors.nativeBcastDtype).toMatch(
        /^DIST_INVALID_ARGUMENT: mpi: buffer has the wrong dtype: expected a Uint8Array/,
      );
      expect(r.errors.nativeGatherLen).toMatch(
        /^DIST_INVALID_ARGUMENT: mpi: recv has 7 elements, expected 6/,
      );
      expect(r.errors.nativeThreadLevel).toMatch(
        /^DIST_INVALID_ARGUMENT: mpi: threadLevel must be an integer in \[0, 3\]/,
      );
      expect(r.errors.nativeAbortCode).toMatch(
        /^DIST_INVALID_ARGUMENT: mpi: code must be an integer in \[0, 255\]/,
      );
    }
  });

  it('a rank killed with SIGKILL during an all-reduce takes the job down with a message, not a hang', async () => {
    const pids: Record<string, number> = {};
    let looping = 0;
    let killed = false;
    let tKill = 0;
    const run = await runMpi(2, 'dead-rank.ts', ['kill'], {
      timeoutMs: 60_000,
      onLine: (line) => {
        const [tag, rank, pid] = line.split(' ');
        if (tag === 'PID' && rank !== undefined) pids[rank] = Number(pid);
        if (tag === 'LOOPING') looping++;
        if (looping === 2 && !killed && pids['1']) {
          killed = true;
          tKill = Date.now();
          process.kill(pids['1'], 'SIGKILL');
        }
      },
    });
    expect(killed).toBe(true);
    const afterKill = Date.now() - tKill;
    // mpirun noticed the death and killed rank 0 (still inside MPI_Allreduce)
    expect(run.signal).toBeNull();
    expect(run.code).not.toBe(0);
    expect(afterKill).toBeLessThan(20_000);
    expect(run.stdout + run.stderr).toMatch(/rank 1 with PID \d+ .*exited on signal 9 \(Killed\)/s);
  });

  it('a rank that throws takes the job down and its error is shown', async () => {
    const run = await runMpi(2, 'dead-rank.ts', ['throw'], { timeoutMs: 60_000 });
    expect(run.signal).toBeNull();
    expect(run.code).not.toBe(0);
    expect(run.ms).toBeLessThan(30_000);
    const all = run.stdout + run.stderr;
    expect(all).toContain('rank 1 failed on purpose before the all-reduce');
    expect(all).toMatch(/exited without calling "finalize"|returned\s+a non-zero exit code/);
  });
});
