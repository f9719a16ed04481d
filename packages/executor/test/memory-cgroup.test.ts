import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedPool } from '../src/embedded-pool.js';
import { detectMemoryCgroup } from '../src/memory-cgroup.js';

// Issue 23: the per-call cgroup v2 memory.max, with detection and a fallback to the sampling cap. The
// cgroup path itself needs a host that delegates a memory controller; where the host has none (this one:
// cgroup v2 offers hugetlb only), what is tested for real is the detection and the fallback.

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A directory laid out as /proc/self/{mountinfo,cgroup} and a cgroup v2 tree would be. */
function tree(opts: { mounted?: boolean; own?: string | null; controllers?: string; subtree?: string }) {
  const root = mkdtempSync(join(tmpdir(), 'agentrl-cgroup-'));
  dirs.push(root);
  const fs = join(root, 'cgroupfs');
  const own = opts.own === undefined ? '/svc' : opts.own;
  const group = join(fs, own ?? '');
  mkdirSync(group, { recursive: true });
  writeFileSync(join(group, 'cgroup.controllers'), `${opts.controllers ?? 'cpu memory pids'}\n`);
  writeFileSync(join(group, 'cgroup.subtree_control'), `${opts.subtree ?? ''}\n`);
  const mountinfo = join(root, 'mountinfo');
  const line = `36 25 0:31 / ${fs.replace(/ /g, '\\040')} rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw`;
  writeFileSync(mountinfo, `${opts.mounted === false ? '' : line}\n24 1 0:22 / /proc rw - proc proc rw\n`);
  const cgroup = join(root, 'cgroup');
  writeFileSync(cgroup, own === null ? '4:memory:/x\n' : `4:memory:/x\n0::${own}\n`);
  return { probe: { mountinfo, cgroup }, group };
}

describe('per-call cgroup memory.max: detection (issue 23)', () => {
  it('on this host: what /sys/fs/cgroup offers decides, and a host without a memory controller falls back', () => {
    const cap = detectMemoryCgroup('auto');
    const unified = '/sys/fs/cgroup/unified/cgroup.controllers';
    if (existsSync(unified) && !readFileSync(unified, 'utf8').includes('memory')) {
      // this development host: cgroup v1 controllers, a cgroup v2 hierarchy offering hugetlb only
      expect(cap).toEqual({ kind: 'sampling', reason: expect.stringContaining('has no memory controller') });
    }
    if (cap.kind === 'sampling') expect(cap.reason).toMatch(/memoryCgroup|cgroup/);
    expect(detectMemoryCgroup('off')).toEqual({ kind: 'sampling', reason: 'memoryCgroup is off' });
  });

  it('names what is missing: no cgroup v2 mount, no group of its own, no memory controller, not enabled for children', () => {
    const reason = (t: ReturnType<typeof tree>, setting = 'auto') => {
      const cap = detectMemoryCgroup(setting, t.probe);
      expect(cap.kind).toBe('sampling');
      return cap.kind === 'sampling' ? cap.reason : '';
    };
    expect(reason(tree({ mounted: false }))).toBe('no cgroup v2 hierarchy is mounted on this host');
    expect(reason(tree({ own: null }))).toContain('has no 0:: line');
    const hugetlb = tree({ controllers: 'hugetlb' });
    expect(reason(hugetlb)).toBe(
      `the cgroup v2 group ${hugetlb.group} has no memory controller (controllers: hugetlb); give memoryCgroup a cgroup v2 directory delegated to this user (memory in its cgroup.controllers, no processes of its own; e.g. a systemd unit with Delegate=yes); the sampling cap is used meanwhile`,
    );
    const notEnabled = tree({});
    expect(reason(notEnabled)).toContain(
      `the memory controller is not enabled for children of ${notEnabled.group}`,
    );
    expect(reason(tree({}), '/nonexistent/agentrl')).toContain(
      '/nonexistent/agentrl is not a cgroup v2 group (no cgroup.controllers)',
    );
  });

  it('an explicit directory gets the controller enabled for its children, and a child group must show memory.max', () => {
    const t = tree({ subtree: 'cpu' });
    const cap = detectMemoryCgroup(t.group, t.probe);
    // the controller was asked for in the parent...
    expect(readFileSync(join(t.group, 'cgroup.subtree_control'), 'utf8')).toBe('+memory');
    // ...and the probe child, a plain directory here, has no memory.max: refused, and removed again
    expect(cap).toEqual({
      kind: 'sampling',
      reason: expect.stringContaining(`a child group of ${t.group} has no memory.max`),
    });
    expect(existsSync(join(t.group, `agentrl-probe-${process.pid}`))).toBe(false);
  });

  it('the pool refuses a relative memoryCgroup at the edge', () => {
    expect(() => new EmbeddedPool({ memoryCgroup: 'cgroup/agentrl' })).toThrow(
      /memoryCgroup: must be 'auto', 'off' or an absolute path/,
    );
  });
});

describe('the fallback runs where no cgroup qualifies (issue 23)', () => {
  const pool = new EmbeddedPool({
    servers: 1,
    preload: [],
    leanServer: false,
    memoryMb: 256,
    memoryCgroup: '/nonexistent/agentrl',
  });
  afterAll(() => pool.close());

  it('says why it samples, and the sampling cap still ends a call whose processes together hold too much', async () => {
    expect(pool.memoryCap).toEqual({
      kind: 'sampling',
      reason: expect.stringContaining('/nonexistent/agentrl is not a cgroup v2 group'),
    });
    const children =
      'import os, time\nfor i in range(8):\n    if os.fork() == 0:\n        b = bytearray(100 << 20)\n        time.sleep(4)\n        os._exit(0)\nfor i in range(8):\n    os.wait()\nprint("held 800 MB")';
    const [hog, fine] = await Promise.all([
      pool.run({ code: children, timeoutMs: 10_000 }),
      pool.run({ code: 'b = bytearray(100 << 20)\nprint(len(b) >> 20)' }),
    ]);
    expect(hog.status).toBe('memory_exceeded');
    expect(hog.stderr).toMatch(
      /MemoryError: the call held \d+ MB, over its memoryMb 256 \(all its processes/,
    );
    expect(fine).toMatchObject({ status: 'ok', stdout: '100\n' });
  }, 60_000);
});
