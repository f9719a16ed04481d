import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedPool } from '../src/embedded-pool.js';
import type { RunRequest, RunResult } from '../src/types.js';
import { descendantsOf, hostProcessesMatching, sleep } from './processes.js';

// Every hostile call runs beside an ordinary one: the service must keep answering others correctly.
let pool: EmbeddedPool;
beforeAll(async () => {
  pool = await new EmbeddedPool({
    timeoutMs: 4000,
    memoryMb: 256,
    maxProcs: 32,
    maxFileMb: 64,
    servers: 1,
  }).start();
});
afterAll(() => pool?.close());

async function hostile(req: RunRequest): Promise<RunResult> {
  const [r, bystander] = await Promise.all([pool.run(req), pool.run({ code: 'print(6 * 7)' })]);
  expect(bystander).toMatchObject({ status: 'ok', stdout: '42\n' });
  const after = await pool.run({ code: 'print("still serving")' });
  expect(after).toMatchObject({ status: 'ok', stdout: 'still serving\n' });
  return r;
}

describe('adversarial code', () => {
  it('fork bomb: stopped by the per-call process limit', async () => {
    const r = await hostile({ code: 'import os\nwhile True:\n    os.fork()' });
    expect(r.status).toBe('runtime_error');
    expect(r.stderr).toContain('BlockingIOError: [Errno 11] Resource temporarily unavailable');
    expect(r.wallMs).toBeLessThan(4000); // ended by the limit, not by the wall clock
  });

  it('memory bomb: memory_exceeded', async () => {
    const r = await hostile({ code: 'x = []\nwhile True:\n    x.append(bytearray(10**7))' });
    expect(r).toMatchObject({ status: 'memory_exceeded', exitCode: 1 });
    expect(r.stderr).toContain('MemoryError');
  });

  it('infinite loop: timeout, killed', async () => {
    const r = await hostile({ code: 'while True:\n    pass', timeoutMs: 1000 });
    expect(r.status).toBe('timeout');
    expect(r.exitCode).toBeNull();
    expect(['SIGKILL', 'SIGXCPU']).toContain(r.signal);
  });

  it('sleep past the limit: timeout at the wall-clock limit', async () => {
    const r = await hostile({
      code: 'import time\nprint("started", flush=True)\ntime.sleep(30)',
      timeoutMs: 500,
    });
    expect(r).toMatchObject({ status: 'timeout', signal: 'SIGKILL', exitCode: null, stdout: 'started\n' });
    expect(r.wallMs).toBeGreaterThanOrEqual(500);
    expect(r.wallMs).toBeLessThan(2500);
  });

  it('100 MB of output: output_truncated, head and tail kept', async () => {
    const r = await hostile({
      code: 'import sys\nsys.stdout.write("h" + "x" * (100 * 1024 * 1024 - 2) + "t")',
      timeoutMs: 10_000,
    });
    expect(r.status).toBe('output_truncated');
    expect(r.stdoutBytes).toBe(100 * 1024 * 1024);
    expect(r.stdout.startsWith('hxxx')).toBe(true);
    expect(r.stdout.endsWith('xxxt')).toBe(true);
    expect(r.stdout).toMatch(/\.\.\.\[\d+ bytes truncated\]\.\.\./);
    expect(r.stdout.length).toBeLessThan(70_000);
  });

  it('writing a 1 GB file: stopped by the file-size limit', async () => {
    const r = await hostile({
      code: 'with open("/tmp/big", "wb") as f:\n    for _ in range(1024):\n        f.write(b"\\0" * (1 << 20))',
    });
    expect(r.status).toBe('runtime_error');
    expect(r.stderr).toContain('OSError: [Errno 27] File too large');
  });

  it('reading files outside the sandbox: they are not there', async () => {
    const own = fileURLToPath(import.meta.url);
    const r = await hostile({
      code: `import os\nprint(os.path.exists(${JSON.stringify(own)}), os.path.exists("/work"), os.path.exists("/root/.ssh"), os.path.exists("/etc/passwd"))\nopen("/etc/shadow").read()`,
    });
    expect(r.status).toBe('runtime_error');
    expect(r.stdout).toBe('False False False False\n');
    expect(r.stderr).toContain("FileNotFoundError: [Errno 2] No such file or directory: '/etc/shadow'");
  });

  it('writing outside the temp dir: read-only file system', async () => {
    // /dev too: bwrap's /dev is one tmpfs per server, writable where user code keeps uid 0 (unprivileged)
    for (const path of ['/usr/evil', '/evil', '/etc/evil', '/agentrl/evil', '/dev/evil']) {
      const r = await hostile({ code: `open(${JSON.stringify(path)}, "w").write("x")` });
      expect(r.status).toBe('runtime_error');
      expect(r.stderr).toContain(`OSError: [Errno 30] Read-only file system: '${path}'`);
    }
  });

  it('opening a network connection: no network', async () => {
    const r = await hostile({
      code: 'import socket\nsocket.create_connection(("1.1.1.1", 80), timeout=2)',
    });
    expect(r.status).toBe('runtime_error');
    expect(r.stderr).toContain('OSError: [Errno 101] Network is unreachable');
    const local = await hostile({
      code: 'import socket\nsocket.create_connection(("127.0.0.1", 22), timeout=2)',
    });
    expect(local.status).toBe('runtime_error');
    expect(local.stderr).toMatch(/ConnectionRefusedError|Network is unreachable|Cannot assign/);
  });

  it('setsid escape: the detached grandchild dies with the call', async () => {
    const marker = String(3_000_000 + Math.floor(Math.random() * 1_000_000)); // unique to this run
    const code = [
      'import os, time',
      'if os.fork() == 0:',
      '    os.setsid()',
      '    if os.fork() == 0:',
      `        os.execv("/bin/sleep", ["sleep", "${marker}"])`,
      '    os._exit(0)',
      'time.sleep(0.3)',
      'print("parent exits")',
    ].join('\n');
    const r = await hostile({ code });
    expect(r).toMatchObject({ status: 'ok', stdout: 'parent exits\n' });
    await sleep(100);
    expect(hostProcessesMatching(`sleep ${marker}`)).toEqual([]);
    // and when the call itself times out
    const t = await hostile({ code: `${code}\ntime.sleep(30)`, timeoutMs: 800 });
    expect(t.status).toBe('timeout');
    await sleep(100);
    expect(hostProcessesMatching(`sleep ${marker}`)).toEqual([]);
  });

  it('ignoring SIGTERM: killed anyway at the limit', async () => {
    const r = await hostile({
      code: 'import signal, time, os\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nos.kill(os.getpid(), signal.SIGTERM)\nprint("survived", flush=True)\ntime.sleep(30)',
      timeoutMs: 500,
    });
    expect(r).toMatchObject({ status: 'timeout', signal: 'SIGKILL', stdout: 'survived\n' });
  });

  it('spawning threads: allowed up to the process limit, refused beyond', async () => {
    const ok = await hostile({
      code: 'import threading\nout = []\nts = [threading.Thread(target=lambda i=i: out.append(i * i)) for i in range(16)]\nfor t in ts: t.start()\nfor t in ts: t.join()\nprint(len(out), sum(out))',
    });
    expect(ok).toMatchObject({ status: 'ok', stdout: '16 1240\n' });
    const many = await hostile({
      code: 'import threading, time\nfor i in range(200):\n    threading.Thread(target=time.sleep, args=(5,), daemon=True).start()',
    });
    expect(many.status).toBe('runtime_error');
    expect(many.stderr).toContain("RuntimeError: can't start new thread");
  });

  it('a thousand calls that each leave a background process: none survives', async () => {
    // Everything a call starts descends from this pool's fork servers (other test runs may share the host).
    const servers = pool.serverPids.filter((p): p is number => p !== undefined);
    const before = descendantsOf(servers).length;
    const code =
      'import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(1000)\n    os._exit(0)\nprint("done")';
    for (let batch = 0; batch < 10; batch++) {
      const rs = await pool.runBatch(Array.from({ length: 100 }, () => ({ code })));
      expect(rs.filter((r) => r.status === 'ok' && r.stdout === 'done\n').length).toBe(100);
    }
    await sleep(200);
    expect(descendantsOf(servers).length).toBe(before);
    expect(await pool.run({ code: 'print("still serving")' })).toMatchObject({ status: 'ok' });
  }, 120_000);
});
