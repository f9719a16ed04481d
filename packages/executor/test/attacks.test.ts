import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunRequest, RunResult } from '../src/types.js';
import { MODES, openFds, type RunningMode, startMode } from './modes.js';
import { sleep } from './processes.js';

// Issue 23's outside attacks, in each of the three modes. Every hostile call runs while a bystander call is
// in flight on the same fork server (servers: 1, no preload), and the bystander must still be answered
// correctly. Everything hostile runs inside the sandbox under test; all traffic stays on loopback.
const POOL = { timeoutMs: 5000, memoryMb: 256, concurrency: 4, maxOutputBytes: 32 << 20 };
const BYSTANDER = { code: 'import time\ntime.sleep(0.6)\nprint("bystander done")' };

async function beside<T>(m: RunningMode, hostile: () => Promise<T>): Promise<T> {
  const bystander = m.ex.run(BYSTANDER);
  await sleep(150); // the bystander is running when the attack starts
  const out = await hostile();
  expect(await bystander).toMatchObject({ status: 'ok', stdout: 'bystander done\n' });
  return out;
}

/** POSTs a batch as a client that skips every check would (http mode only). */
async function rawBatch(
  m: RunningMode,
  requests: unknown[],
): Promise<{ status: number; results: RunResult[] }> {
  const res = await request(`${m.url}/v1/run-batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ requests }),
  });
  const body = (await res.body.json()) as { results: RunResult[] };
  return { status: res.statusCode, results: body.results };
}

describe.each(MODES)('attacks through the %s executor (issue 23)', (mode) => {
  let m: RunningMode;
  beforeAll(async () => {
    m = await startMode(mode, POOL);
  }, 60_000);
  afterAll(() => m?.stop());

  it('class 1: calls whose text UTF-8 cannot carry fail alone and leave no descriptor open', async () => {
    await m.ex.run({ code: 'print(1)' }); // the fork server is up
    const before = openFds(m.forkServers());
    const bad: RunRequest[] = Array.from({ length: 100 }, (_, i) =>
      i % 2 ? { code: 'print(1)', stdin: '\ud800' } : { code: 'print("\udfff")' },
    );
    const results = await beside(m, () => m.ex.runBatch([...bad, { code: 'print(6 * 7)' }]));
    expect(results.at(-1)).toMatchObject({ status: 'ok', stdout: '42\n' });
    for (const r of results.slice(0, -1)) {
      expect(r.status).toBe('sandbox_error');
      expect(r.error?.code).toBe('EXECUTOR_INVALID_REQUEST');
    }
    if (m.url) {
      // past the client's own check: the server refuses each such call itself
      const raw = await rawBatch(m, [...bad.slice(0, 20), { code: 'print(7)' }]);
      expect(raw.status).toBe(200);
      expect(raw.results.at(-1)).toMatchObject({ status: 'ok', stdout: '7\n' });
      expect(raw.results[0]?.error?.code).toBe('EXECUTOR_INVALID_REQUEST');
    }
    expect(openFds(m.forkServers())).toBe(before);
  });

  it('class 7: one call out of range fails alone; the rest of its batch runs', async () => {
    const outOfRange: RunRequest[] = [
      { code: 'print(1)', memoryMb: 1 },
      { code: 'print(1)', timeoutMs: 10 ** 9 },
      { code: 'print(1)', maxOutputBytes: 1.5 },
      { code: 'print(1)', truncate: 'tail' as 'head' },
    ];
    const results = await beside(m, () =>
      m.ex.runBatch([{ code: 'print("a")' }, ...outOfRange, { code: 'print("b")' }]),
    );
    expect(results[0]).toMatchObject({ status: 'ok', stdout: 'a\n' });
    expect(results.at(-1)).toMatchObject({ status: 'ok', stdout: 'b\n' });
    for (const r of results.slice(1, -1)) expect(r.error?.code).toBe('EXECUTOR_INVALID_REQUEST');
    expect(results[1]?.error?.message).toContain('memoryMb must be an integer between 16 and 65536; got 1');
    if (m.url) {
      const raw = await rawBatch(m, [{ code: 'print("a")' }, ...outOfRange, 7, { code: 'print("b")' }]);
      expect(raw.status).toBe(200);
      expect(raw.results.map((r) => r.status)).toEqual(['ok', ...Array(5).fill('sandbox_error'), 'ok']);
    }
  });

  it('class 5: a 32 MiB result is parsed in linear time, and its neighbours are not kept waiting', async () => {
    const t0 = performance.now();
    const r = await beside(m, () =>
      m.ex.run({ code: 'import sys\nsys.stdout.write("x" * ((32 << 20) - 3) + "end")', timeoutMs: 20_000 }),
    );
    expect(r.status).toBe('ok');
    expect(r.stdout.length).toBe(32 << 20);
    expect(r.stdout.endsWith('xend')).toBe(true);
    // 27 s when each 64 KiB chunk was appended to one string and searched again from its start
    expect(performance.now() - t0).toBeLessThan(8000);
  }, 60_000);

  it('class 2: memoryMb caps what the whole call holds: all its processes, memfds, /tmp', async () => {
    // POOL.memoryMb is 256. Each attack stays under every per-process limit; together they are far over.
    const memfd =
      'import os\nfds = []\nfor i in range(20):\n    fd = os.memfd_create("x")\n    os.posix_fallocate(fd, 0, 60 << 20)\n    fds.append(fd)\nprint("held", len(fds) * 60, "MB")';
    const children =
      'import os, time\nfor i in range(8):\n    if os.fork() == 0:\n        b = bytearray(100 << 20)\n        time.sleep(4)\n        os._exit(0)\nfor i in range(8):\n    os.wait()\nprint("held 800 MB")';
    const tmpAndHeap =
      'import time\nfor i in range(2):\n    with open(f"/tmp/f{i}", "wb") as f:\n        f.write(b"x" * (50 << 20))\nb = bytearray(200 << 20)\ntime.sleep(4)\nprint("held 300 MB")';
    const [m1, m2, m3, fine] = await beside(m, () =>
      m.ex.runBatch([
        { code: memfd },
        { code: children },
        { code: tmpAndHeap },
        { code: 'b = bytearray(150 << 20)\nprint(len(b) >> 20)' },
      ]),
    );
    expect(m1?.status).toBe('runtime_error');
    expect(m1?.stderr).toContain('PermissionError: [Errno 1] Operation not permitted');
    for (const r of [m2, m3]) {
      expect(r?.status).toBe('memory_exceeded');
      expect(r?.stderr).toMatch(/MemoryError: the call held \d+ MB, over its memoryMb 256/);
    }
    expect(fine).toMatchObject({ status: 'ok', stdout: '150\n' });
    // and no call may lift the server's own limit
    const above = await m.ex.runBatch([{ code: 'print(1)', memoryMb: 4096 }]);
    expect(above[0]?.error?.message).toContain("memoryMb 4096 is above this executor's ceiling of 256");
  }, 60_000);

  it("class 3: a call's own memory holds no other call's code, stdin or output", async () => {
    const needle = `Zq${randomBytes(4).toString('hex')}`;
    const secret = (what: string) => `${needle}${what}${randomBytes(4).toString('hex')}`;
    const [printed, inCode, inStdin] = [secret('out'), secret('cod'), secret('inp')];
    // an earlier call's stdout and stderr, then a call in flight with a secret in its code and its stdin
    await m.ex.run({ code: `import sys\nprint("${printed}")\nprint("${printed}", file=sys.stderr)` });
    const bystander = m.ex.run({
      code: `import sys, time\nkey = "${inCode}"\nline = sys.stdin.readline()\ntime.sleep(1.5)\nprint("bystander", len(key), len(line))`,
      stdin: `${inStdin}\n`,
    });
    await sleep(300);
    // the hostile call knows the needle only as hex, so its own code is not a hit; it reads its own
    // writable mappings with ctypes (/proc/self/mem is closed to it: the process is not dumpable)
    const scan = [
      'import ctypes, re',
      `pattern = re.escape(bytes.fromhex("${Buffer.from(needle).toString('hex')}")) + rb"[a-z]{3}[0-9a-f]{8}"`,
      'found = set()',
      'for line in open("/proc/self/maps").read().splitlines():',
      '    span, perms = line.split()[:2]',
      '    if not perms.startswith("rw"):',
      '        continue',
      '    lo, hi = (int(x, 16) for x in span.split("-"))',
      '    data = ctypes.string_at(lo, hi - lo)',
      '    found.update(m.decode() for m in re.findall(pattern, data))',
      'print(sorted(found))',
    ].join('\n');
    const r = await m.ex.run({ code: scan });
    expect(await bystander).toMatchObject({
      status: 'ok',
      stdout: `bystander ${inCode.length} ${inStdin.length + 1}\n`,
    });
    expect(r).toMatchObject({ status: 'ok', stdout: '[]\n' });
  });
});

/** A host listener on a unix socket inside `dir`; counts the connections it gets. */
async function hostListener(
  dir: string,
): Promise<{ path: string; connections: () => number; server: Server }> {
  let n = 0;
  const path = `${dir}/host.sock`;
  const server = createServer((c) => {
    n++;
    c.end('host secret\n');
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  chmodSync(path, 0o777);
  return { path, connections: () => n, server };
}

// Calls of one fork server sharing its network namespace (networkPerCall off), and host directories exposed
// read-only (one under /tmp with --read-only, re-bound into each call's tmpfs; one elsewhere with --pythonpath)
// that hold a host listener's socket and a device node.
describe.each(MODES)(
  'unix sockets and devices through the %s executor (issue 23, classes 6 and 4)',
  (mode) => {
    let m: RunningMode;
    const dirs = [mkdtempSync('/tmp/agentrl-expose-'), mkdtempSync('/var/tmp/agentrl-expose-')];
    const listeners: Awaited<ReturnType<typeof hostListener>>[] = [];
    beforeAll(async () => {
      for (const d of dirs) {
        chmodSync(d, 0o755);
        listeners.push(await hostListener(d));
        execFileSync('mknod', ['-m', '666', `${d}/null`, 'c', '1', '3']);
      }
      m = await startMode(mode, {
        ...POOL,
        networkPerCall: false,
        readOnly: [dirs[0] as string],
        pythonPath: [dirs[1] as string],
      });
    }, 60_000);
    afterAll(async () => {
      await m?.stop();
      for (const l of listeners) l.server.close();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });

    it('class 6: calls cannot hand each other descriptors over an abstract socket', async () => {
      const name = `agentrl-pass-${randomBytes(4).toString('hex')}`;
      const owner = m.ex.run({
        code: [
          'import os, socket',
          'r, w = os.pipe()',
          'try:',
          '    s = socket.socket(socket.AF_UNIX)',
          `    s.bind("\\0${name}"); s.listen(); s.settimeout(2)`,
          '    c, _ = s.accept()',
          '    socket.send_fds(c, [b"x"], [w])',
          '    print("sent")',
          'except OSError as e:',
          '    print(type(e).__name__)',
        ].join('\n'),
      });
      await sleep(300);
      const thief = await m.ex.run({
        code: [
          'import socket',
          'for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):',
          '    try:',
          '        s = socket.socket(socket.AF_UNIX, kind)',
          `        s.connect("\\0${name}")`,
          '        print("connected", socket.recv_fds(s, 1, 1)[1])',
          '    except OSError as e:',
          '        print(type(e).__name__)',
          'try:',
          '    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)',
          `    a.sendto(b"x", "\\0${name}")`,
          '    print("sent by datagram")',
          'except OSError as e:',
          '    print(type(e).__name__)',
        ].join('\n'),
      });
      expect(thief).toMatchObject({
        status: 'ok',
        stdout: 'PermissionError\nPermissionError\nPermissionError\n',
      });
      expect(await owner).toMatchObject({ status: 'ok', stdout: 'PermissionError\n' });
      // what stays allowed: a connected pair inside one call (asyncio, multiprocessing.Pipe)
      const pair = await m.ex.run({
        code: 'import socket\na, b = socket.socketpair()\na.send(b"ok")\nprint(b.recv(2).decode())',
      });
      expect(pair).toMatchObject({ status: 'ok', stdout: 'ok\n' });
    });

    it('class 4: a socket or a device under an exposed path reaches nothing on the host', async () => {
      const probe = (path: string) =>
        [
          'import os, socket',
          'try:',
          '    s = socket.socket(socket.AF_UNIX)',
          `    s.connect("${path}/host.sock")`,
          '    print(s.recv(100))',
          'except OSError as e:',
          '    print(type(e).__name__)',
          'try:',
          `    os.open("${path}/null", os.O_RDWR)`,
          '    print("device opened")',
          'except OSError as e:',
          '    print(type(e).__name__)',
          `print(sorted(os.listdir("${path}")))`,
        ].join('\n');
      const results = await beside(m, () => m.ex.runBatch(dirs.map((d) => ({ code: probe(d) }))));
      for (const r of results)
        expect(r).toMatchObject({
          status: 'ok',
          stdout: "PermissionError\nPermissionError\n['host.sock', 'null']\n",
        });
      expect(listeners.map((l) => l.connections())).toEqual([0, 0]);
    });
  },
);
