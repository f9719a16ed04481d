import { spawn, spawnSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { probeMpi } from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
export const FIXTURES = resolve(here, 'fixtures');

/** Why the mpirun tests cannot run here, or undefined when they can. */
export function mpirunMissing(): string | undefined {
  if (spawnSync('mpirun', ['--version'], { stdio: 'ignore' }).status !== 0) {
    return 'mpirun not on PATH (apt-get install openmpi-bin libopenmpi-dev; CI installs them)';
  }
  const p = probeMpi();
  return p.available ? undefined : `MPI not usable: ${p.detail}`;
}

export interface MpiRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Environment for mpirun as root in a container (Open MPI refuses root without these). */
export function mpiEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, OMPI_ALLOW_RUN_AS_ROOT: '1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1', ...extra };
}

/**
 * `mpirun -n N node --import tsx <script> ...args`, real processes. `onLine` sees stdout lines as
 * they come (for tests that act mid-run); the run is killed after `timeoutMs`.
 */
export function runMpi(
  n: number,
  script: string,
  args: string[] = [],
  opts: { timeoutMs?: number; onLine?: (line: string) => void; env?: NodeJS.ProcessEnv } = {},
): Promise<MpiRun> {
  const t0 = Date.now();
  const child = spawn(
    'mpirun',
    [
      '-n',
      String(n),
      '--oversubscribe',
      '--allow-run-as-root',
      '--bind-to',
      'none',
      process.execPath,
      '--conditions=@agentrl/source',
      '--import',
      'tsx',
      resolve(FIXTURES, script),
      ...args,
    ],
    { env: mpiEnv(opts.env), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  let pending = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d;
    pending += d;
    let i = pending.indexOf('\n');
    while (i >= 0) {
      opts.onLine?.(pending.slice(0, i));
      pending = pending.slice(i + 1);
      i = pending.indexOf('\n');
    }
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
  return new Promise((resolvePromise) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

/** The `RESULT <json>` lines of a run, by rank. */
export function results<T>(run: MpiRun): T[] {
  const out: T[] = [];
  for (const line of run.stdout.split('\n')) {
    if (!line.startsWith('RESULT ')) continue;
    const r = JSON.parse(line.slice(7)) as T & { rank: number };
    out[r.rank] = r;
  }
  return out;
}
