import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readFileSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { isAbsolute, join } from 'node:path';

/**
 * How the per-call memory cap is enforced. `cgroup`: each call in a child cgroup of `parent` with
 * `memory.max` = its memoryMb (the kernel counts every page the call holds, kernel memory included, and
 * never lets it past), on top of the sampling cap. `sampling`: the sampling cap alone (the fork server
 * sums what each call holds every 20 ms), with the reason the cgroup path is not available.
 */
export type MemoryCap = { kind: 'cgroup'; parent: string } | { kind: 'sampling'; reason: string };

/** Where detection reads the process's mounts and cgroup (tests point these at a prepared tree). */
export interface CgroupProbe {
  mountinfo: string;
  cgroup: string;
}
const SELF: CgroupProbe = { mountinfo: '/proc/self/mountinfo', cgroup: '/proc/self/cgroup' };

const DELEGATE_HINT =
  'give memoryCgroup a cgroup v2 directory delegated to this user (memory in its cgroup.controllers, ' +
  'no processes of its own; e.g. a systemd unit with Delegate=yes); the sampling cap is used meanwhile';

/**
 * Decides the memory cap of a pool. `off`: sampling. An absolute path: that directory must be a cgroup v2
 * group this process may manage children of. `auto`: this process's own cgroup v2 group, which qualifies
 * only when the memory controller is already enabled for its children. Never throws: what is missing is
 * the returned `reason`.
 */
export function detectMemoryCgroup(setting: string, probe: CgroupProbe = SELF): MemoryCap {
  const fallback = (reason: string): MemoryCap => ({ kind: 'sampling', reason });
  if (setting === 'off') return fallback('memoryCgroup is off');
  const mount = cgroup2Mount(probe.mountinfo);
  if (mount === null) return fallback('no cgroup v2 hierarchy is mounted on this host');
  let parent: string;
  if (setting === 'auto') {
    const own = ownCgroup(probe.cgroup);
    if (own === null)
      return fallback(`this process has no cgroup v2 group (${probe.cgroup} has no 0:: line)`);
    parent = join(mount, own);
  } else if (isAbsolute(setting)) {
    parent = setting;
  } else {
    return fallback(`memoryCgroup ${JSON.stringify(setting)} is not 'auto', 'off' or an absolute path`);
  } // (the pool's config schema refuses such a value before this)
  return checkParent(parent, setting === 'auto');
}

function checkParent(parent: string, auto: boolean): MemoryCap {
  const fallback = (why: string): MemoryCap => ({ kind: 'sampling', reason: `${why}; ${DELEGATE_HINT}` });
  const read = (file: string) => {
    try {
      return readFileSync(join(parent, file), 'utf8').trim().split(/\s+/).filter(Boolean);
    } catch {
      return null;
    }
  };
  const controllers = read('cgroup.controllers');
  if (controllers === null) return fallback(`${parent} is not a cgroup v2 group (no cgroup.controllers)`);
  if (!controllers.includes('memory')) {
    return fallback(
      `the cgroup v2 group ${parent} has no memory controller (controllers: ${controllers.join(' ') || 'none'})`,
    );
  }
  if (!(read('cgroup.subtree_control') ?? []).includes('memory')) {
    // a group holding processes cannot enable controllers for children (cgroup v2's no-internal-process rule)
    if (auto) return fallback(`the memory controller is not enabled for children of ${parent}`);
    try {
      writeFileSync(join(parent, 'cgroup.subtree_control'), '+memory');
    } catch (e) {
      return fallback(
        `cannot enable the memory controller for children of ${parent} (${(e as Error).message})`,
      );
    }
  }
  try {
    accessSync(parent, constants.W_OK);
    const trial = join(parent, `agentrl-probe-${process.pid}`);
    mkdirSync(trial);
    try {
      if (!existsSync(join(trial, 'memory.max')))
        return fallback(`a child group of ${parent} has no memory.max`);
    } finally {
      rmdirSync(trial);
    }
  } catch (e) {
    return fallback(`cannot create child groups in ${parent} (${(e as Error).message})`);
  }
  return { kind: 'cgroup', parent };
}

/** The mount point of the cgroup v2 hierarchy, from mountinfo (`... /sys/fs/cgroup rw,... - cgroup2 ...`). */
function cgroup2Mount(mountinfo: string): string | null {
  let text: string;
  try {
    text = readFileSync(mountinfo, 'utf8');
  } catch {
    return null;
  }
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (right?.split(' ')[0] === 'cgroup2') return unescapeMount(left?.split(' ')[4] ?? '');
  }
  return null;
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
const unescapeMount = (p: string) =>
  p.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(Number.parseInt(o, 8)));

/** This process's cgroup v2 path (`0::/user.slice/...`). */
function ownCgroup(cgroupFile: string): string | null {
  try {
    const line = readFileSync(cgroupFile, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('0::'));
    return line === undefined ? null : line.slice(3);
  } catch {
    return null;
  }
}
