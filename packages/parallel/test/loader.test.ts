import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The shared run-time loader of the MPI and NCCL bindings (native/src/parallel/dl_loader.h): which
// library each env var selects, the message when none loads, and the list of missing symbols. Each
// case runs in a fresh process, since a binding loads its library once. NCCL cannot run here (no
// GPU), so small stand-in libraries built from fixtures/fake-libs/*.c play RCCL and the HIP runtime:
// the binding's loading, argument checks and host -> device -> host staging run for real against them.
const fixtures = join(import.meta.dirname, 'fixtures');
let dir = '';

function build(name: string, source: string, ...defines: string[]): string {
  const out = join(dir, name);
  execFileSync('cc', ['-shared', '-fPIC', '-O1', ...defines, '-o', out, join(fixtures, 'fake-libs', source)]);
  return out;
}

/** Runs `code` (or a fixture) in a fresh node with the addon and these env vars; its stdout, parsed. */
function inFreshProcess(env: Record<string, string>, script: string[]): Record<string, unknown> {
  const r = spawnSync(process.execPath, ['--conditions=@agentrl/source', '--import', 'tsx', ...script], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  if (r.status !== 0) throw new Error(`subprocess failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '{}');
}

const probe = (which: 'mpi' | 'nccl', env: Record<string, string>) =>
  inFreshProcess(env, [
    '-e',
    `import('@agentrl/native').then((m) => console.log(JSON.stringify(m.loadNative().${which}.probe())))`,
  ]);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentrl-fake-libs-'));
  build('libfake-rccl.so', 'fake_rccl.c');
  build('libfake-rccl-nobcast.so', 'fake_rccl.c', '-DFAKE_NO_BROADCAST');
  build('libamdhip64.so.6', 'fake_amdhip64.c');
  build('libfake-mpi.so', 'fake_mpi.c');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('MPI loader', () => {
  it('lists every symbol a library that looks like Open MPI lacks', () => {
    const lib = join(dir, 'libfake-mpi.so');
    expect(probe('mpi', { AGENTRL_MPI_LIBRARY: lib })).toMatchObject({
      available: false,
      implementation: 'openmpi',
      library: lib,
      detail:
        `${lib} lacks MPI_Initialized, MPI_Finalized, MPI_Finalize, MPI_Comm_rank, MPI_Comm_size, ` +
        'MPI_Comm_set_errhandler, MPI_Barrier, MPI_Bcast, MPI_Allreduce, MPI_Allgather, MPI_Abort, MPI_Scatterv, ' +
        'MPI_Error_string, MPI_Get_library_version, ompi_mpi_byte, ompi_mpi_float, ompi_mpi_double, ' +
        'ompi_mpi_op_sum, ompi_mpi_errors_are_fatal',
    });
  });
});

describe('NCCL / RCCL loader', () => {
  it('says why no library loaded and how to fix it', () => {
    const p = probe('nccl', { AGENTRL_NCCL_LIBRARY: '/nonexistent/librccl.so' });
    expect(p).toMatchObject({ available: false, implementation: 'none', library: '', version: 0 });
    expect(p.detail).toMatch(
      /^not available: no NCCL\/RCCL library \(\/nonexistent\/librccl\.so: cannot open shared object file.*\); install NCCL \(libnccl2\) or RCCL \(librccl1\) on a GPU machine, or set AGENTRL_NCCL_LIBRARY$/,
    );
  });

  it('names the symbols missing from the library and its runtime', () => {
    const lib = join(dir, 'libfake-rccl-nobcast.so');
    expect(probe('nccl', { AGENTRL_NCCL_LIBRARY: lib, LD_LIBRARY_PATH: dir })).toMatchObject({
      available: false,
      implementation: 'rccl',
      library: lib,
      detail: 'not available: missing symbols ncclBroadcast',
    });
  });

  it('loads RCCL with its HIP runtime, then reduces and broadcasts through staged device memory', () => {
    const lib = join(dir, 'libfake-rccl.so');
    const out = inFreshProcess({ AGENTRL_NCCL_LIBRARY: lib, LD_LIBRARY_PATH: dir }, [
      join(fixtures, 'fake-nccl.ts'),
    ]);
    expect(out.probe).toEqual({
      available: true,
      implementation: 'rccl',
      library: lib,
      version: 21805,
      detail: `rccl 21805 via ${lib}, 1 device(s)`,
    });
    expect(out.uniqueId).toEqual([128, 0x5a, 0x5a]);
    // rank 0 of 3 ranks holding the same values: each element summed three times, in its own dtype
    expect(out.f32).toEqual([4.5, -6, 9.75]);
    expect(out.f64).toEqual([0.1 * 3, 3e300, -21]);
    expect(out.own).toEqual([1, 2, 3]); // this rank is the root: its bytes stay
    expect(out.other).toEqual([0xab, 0xab, 0xab]); // root 2's bytes arrive
    expect(out.errors).toEqual({
      int32:
        'DIST_INVALID_ARGUMENT nccl: buffer has the wrong dtype: expected a Float32Array or a Float64Array',
      root: 'DIST_INVALID_ARGUMENT nccl: root must be an integer in [0, 2], got 3.000000',
      badId: 'DIST_NATIVE_FAILURE nccl: ncclCommInitRank failed: invalid argument (fake) (4)',
      destroyed: 'DIST_INVALID_ARGUMENT nccl: the NCCL communicator was destroyed',
    });
    expect(out.worldOfOne).toEqual([4, 5]);
  });
});
