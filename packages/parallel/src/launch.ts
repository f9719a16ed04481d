import { spawn, spawnSync } from 'node:child_process';
import { probeMpi } from './communicator.js';

/** Why `mpirun` jobs cannot run here (no mpirun, or no usable Open MPI), or undefined when they can. */
export function mpirunMissing(): string | undefined {
  if (spawnSync('mpirun', ['--version'], { stdio: 'ignore' }).status !== 0) {
    return 'mpirun not on PATH (apt-get install openmpi-bin libopenmpi-dev)';
  }
  const p = probeMpi();
  return p.available ? undefined : `MPI not usable: ${p.detail}`;
}

export interface MpirunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Wall milliseconds from start to exit. */
  ms: number;
}

export interface MpirunOptions {
  cwd?: string;
  /** Added to process.env (Open MPI's run-as-root switches are always set). */
  env?: NodeJS.ProcessEnv;
  /** SIGKILL mpirun after this long (default 10 min). */
  timeoutMs?: number;
  /** Sees each stdout line as it arrives (to act mid-run). */
  onLine?: (line: string) => void;
  /** Gets mpirun's pid once it started (its children are the ranks on this node). */
  onStart?: (pid: number) => void;
}

/**
 * `mpirun -n <n> --oversubscribe --bind-to none <argv>` as a child process, with Open MPI allowed to
 * run as root (containers, CI): how the tests launch real multi-rank jobs.
 */
export function runMpirun(
  n: number,
  argv: readonly string[],
  opts: MpirunOptions = {},
): Promise<MpirunResult> {
  const t0 = Date.now();
  const child = spawn(
    'mpirun',
    ['-n', String(n), '--oversubscribe', '--allow-run-as-root', '--bind-to', 'none', ...argv],
    {
      cwd: opts.cwd,
      env: { ...process.env, OMPI_ALLOW_RUN_AS_ROOT: '1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  if (child.pid !== undefined) opts.onStart?.(child.pid);
  let stdout = '';
  let stderr = '';
  let pending = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d;
    pending += d;
    for (let i = pending.indexOf('\n'); i >= 0; i = pending.indexOf('\n')) {
      opts.onLine?.(pending.slice(0, i));
      pending = pending.slice(i + 1);
    }
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 600_000);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}
