import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ExecutorError } from './errors.js';

/** Where the fork server script lives (shipped in the package's python/ folder). */
export const FORKSERVER_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'python');

export interface PythonInfo {
  executable: string;
  /** Directories Python reads at run time (prefixes of sys.path). */
  roots: string[];
}

const infoCache = new Map<string, PythonInfo>();

/** Resolves `python3` (through pyenv shims, symlinks) to the real binary and the trees it needs. */
export function resolvePython(python: string): PythonInfo {
  const hit = infoCache.get(python);
  if (hit) return hit;
  let out: string;
  try {
    out = execFileSync(
      python,
      [
        '-I',
        '-c',
        'import sys,json; print(json.dumps({"exe": sys.executable, "roots": sorted({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix})}))',
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
  } catch (cause) {
    throw new ExecutorError(
      'SANDBOX_UNAVAILABLE',
      `could not run ${python}; install Python 3.9+ or set the python option to an interpreter path`,
      { cause },
    );
  }
  const parsed = JSON.parse(out) as { exe: string; roots: string[] };
  const info = { executable: realpathSync(parsed.exe), roots: parsed.roots.filter((r) => existsSync(r)) };
  infoCache.set(python, info);
  return info;
}

/** bwrap arguments for one fork server: read-only system, no network, own namespaces, tmpfs root. */
export function bwrapArgs(
  info: PythonInfo,
  extraReadOnly: readonly string[],
  memoryCgroup?: string | null,
): string[] {
  // As root, bwrap runs privileged (no user namespace) so that each call can switch to `nobody`: the
  // kernel never enforces RLIMIT_NPROC on uid 0. Unprivileged, bwrap needs a user namespace of its own.
  const root = process.getuid?.() === 0;
  const args = [
    ...(root ? [] : ['--unshare-user', '--uid', '0', '--gid', '0']),
    '--unshare-pid',
    '--unshare-net',
    '--unshare-ipc',
    '--unshare-uts',
    // a call moves itself into its own group under memoryCgroup, outside this server's cgroup namespace root
    ...(memoryCgroup ? [] : ['--unshare-cgroup-try']),
    '--die-with-parent',
    '--new-session',
    // The fork server needs capabilities to build each call's namespaces and mounts; every child drops
    // them all (and, as root, becomes nobody) before running code.
    '--cap-add',
    'ALL',
    '--hostname',
    'sandbox',
  ];
  const seen = new Set<string>();
  const dirs = new Set<string>();
  const roBind = (p: string, how: '--ro-bind' | '--bind' = '--ro-bind') => {
    if (seen.has(p) || !existsSync(p)) return;
    seen.add(p);
    // bwrap would create missing parents as 0700 dirs, which nobody (the user code) could not cross.
    const parents: string[] = [];
    for (let d = dirname(p); d !== '/'; d = dirname(d)) parents.unshift(d);
    for (const d of parents) {
      if (dirs.has(d) || seen.has(d)) continue;
      dirs.add(d);
      args.push('--perms', '0755', '--dir', d);
    }
    args.push(how, p, p);
  };
  roBind('/usr');
  for (const top of ['/bin', '/sbin', '/lib', '/lib32', '/lib64']) {
    if (!existsSync(top)) continue;
    const st = lstatSync(top);
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(top), top);
    else roBind(top);
  }
  for (const f of ['/etc/ld.so.cache', '/etc/localtime', '/etc/alternatives']) roBind(f);
  for (const r of info.roots) if (!r.startsWith('/usr/')) roBind(r);
  roBind(dirname(info.executable));
  args.push('--ro-bind', FORKSERVER_DIR, '/agentrl');
  // The server's /tmp first, so that configured paths under /tmp land on it instead of being hidden by it.
  args.push('--proc', '/proc', '--dev', '/dev', '--dir', '/dev/shm', '--tmpfs', '/tmp');
  for (const p of extraReadOnly) roBind(p);
  if (memoryCgroup) {
    // the one writable path (its own mount, so the read-only root leaves it writable); each call hides it
    // again once it has joined its group
    roBind(memoryCgroup, '--bind');
  }
  args.push('--remount-ro', '/');
  return args;
}

/** Paths each call's own tmpfs (on /tmp and /dev/shm) would hide; the fork server re-binds them per call. */
export function underCallTmpfs(path: string): boolean {
  return /^\/(tmp|dev\/shm)(\/|$)/.test(path);
}

/**
 * Checks the host paths a config exposes to user code (read-only paths, PYTHONPATH entries): absolute,
 * existing, not the whole file system. Returns them normalised; throws INVALID_CONFIG naming the bad one.
 */
export function checkExposedPaths(paths: readonly string[], what: string): string[] {
  return paths.map((p) => {
    const norm = resolve(p);
    const hidden =
      /^\/(proc|sys)(\/|$)/.test(norm) || (/^\/dev(\/|$)/.test(norm) && !/^\/dev\/shm\/./.test(norm));
    if (!isAbsolute(p) || hidden || ['/', '/tmp', '/dev/shm'].includes(norm)) {
      throw new ExecutorError(
        'INVALID_CONFIG',
        `${what}: ${JSON.stringify(p)} cannot be exposed; give an absolute path to a directory or file below /, other than /proc, /dev, /sys, /tmp or /dev/shm themselves`,
      );
    }
    if (!existsSync(norm)) {
      throw new ExecutorError(
        'INVALID_CONFIG',
        `${what}: ${norm} does not exist on this host; fix the path or drop it`,
      );
    }
    return norm;
  });
}

let bwrapChecked: string | undefined;

/** Fails early, with what to do, when bubblewrap is missing or cannot create namespaces here. */
export function checkBwrap(): void {
  if (bwrapChecked === 'ok') return;
  try {
    execFileSync('bwrap', ['--unshare-all', '--ro-bind', '/', '/', '--', 'true'], {
      timeout: 10_000,
      stdio: 'pipe',
    });
    bwrapChecked = 'ok';
  } catch (cause) {
    throw new ExecutorError(
      'SANDBOX_UNAVAILABLE',
      'bubblewrap (bwrap) is missing or may not create namespaces on this machine; apt-get install bubblewrap, ' +
        'allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1), or set sandbox: "none" ' +
        "to run with the fork server's own isolation only",
      { cause },
    );
  }
}
