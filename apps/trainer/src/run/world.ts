import { execFileSync } from 'node:child_process';
import { arch, cpus, platform } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuKernels, setEngineThreads } from '@agentrl/engine';

/**
 * What a run ran on: the facts that change its numbers or its speed without being in the config.
 * The same seed gives other bits on another CPU kernel path, and another speed with other threads
 * or ranks; a figure quoted from a run is only as good as this record beside it.
 */
export interface RunWorld {
  /** Processes of the data-parallel job (1 without mpirun). */
  ranks: number;
  /** Native compute threads per rank in effect (the config's `threads`, 0 resolved). */
  threads: number;
  /** The CPU kernel path the native engine ran (avx512, avx2 or portable) and the others this CPU has. */
  cpuKernels: { active: string; supported: string[] };
  /** The git commit of the trainer's checkout, and whether tracked files differed from it; null outside a checkout. */
  commit: string | null;
  dirty: boolean | null;
  node: string;
  platform: string;
  cpu: string;
  startedAt: string;
}

/** The world of this process, as one rank of `ranks`. */
export function describeWorld(ranks: number): RunWorld {
  const kernels = cpuKernels();
  const { commit, dirty } = gitCommit();
  return {
    ranks,
    threads: setEngineThreads(0),
    cpuKernels: { active: kernels.active, supported: [...kernels.supported] },
    commit,
    dirty,
    node: process.version,
    platform: `${platform()}-${arch()}`,
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    startedAt: new Date().toISOString(),
  };
}

/**
 * The commit of the checkout this trainer runs from: `AGENTRL_COMMIT` when set (an install without
 * .git), else git on this file's own directory (not the working directory, which may be anywhere).
 */
function gitCommit(): { commit: string | null; dirty: boolean | null } {
  const given = process.env.AGENTRL_COMMIT;
  if (given) return { commit: given, dirty: null };
  const here = dirname(fileURLToPath(import.meta.url));
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', here, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5000,
    }).trim();
  try {
    const commit = git('rev-parse', 'HEAD');
    return { commit, dirty: git('status', '--porcelain', '--untracked-files=no').length > 0 };
  } catch {
    return { commit: null, dirty: null };
  }
}
