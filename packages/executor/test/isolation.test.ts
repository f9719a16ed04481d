import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedPool } from '../src/embedded-pool.js';
import { FORKSERVER_DIR } from '../src/sandbox-spec.js';
import type { RunRequest, RunResult } from '../src/types.js';
import { descendantsOf, sleep } from './processes.js';

// Calls of ONE fork server (servers: 1, no lean server), so that every hostile call shares its server with
// the bystander it tries to reach. Everything hostile runs inside the sandbox under test.
let pool: EmbeddedPool;
beforeAll(async () => {
  pool = await new EmbeddedPool({ timeoutMs: 5000, servers: 1, preload: [], leanServer: false }).start();
});
afterAll(() => pool?.close());

/** Runs `hostile` while a bystander call is in flight on the same server; both results. */
async function beside(hostile: RunRequest, bystanderMs = 800): Promise<[RunResult, RunResult]> {
  const bystander = pool.run({
    code: `import time\ntime.sleep(${bystanderMs / 1000})\nprint("bystander done")`,
  });
  await sleep(200); // the bystander is running when the hostile call starts
  const r = await pool.run(hostile);
  return [r, await bystander];
}

describe('a call cannot reach the other calls of its fork server (issue 14, item 2)', () => {
  it('os.kill(0, SIGKILL) kills nothing but its own process group', async () => {
    const [r, bystander] = await beside({ code: 'import os\nos.kill(0, 9)\nprint("after kill(0)")' });
    // Before the fix every call shared the server's process group: the bystander died and read as
    // memory_exceeded. The caller is pid 1 of its own namespace, which its own kill cannot end.
    expect(bystander).toMatchObject({ status: 'ok', stdout: 'bystander done\n' });
    expect(r).toMatchObject({ status: 'ok', stdout: 'after kill(0)\n' });
  });

  it('killing every pid and every group number it can name reaches only its own processes', async () => {
    const code = [
      'import os, signal, time',
      'if os.fork() == 0:',
      '    time.sleep(30)',
      'ids = [0, -1, os.getpgrp(), -os.getpgrp()] + list(range(2, 2048)) + [-p for p in range(1, 2048)]',
      'hit = 0',
      'for p in ids:',
      '    try:',
      '        os.kill(p, signal.SIGKILL); hit += 1',
      '    except (ProcessLookupError, PermissionError):',
      '        pass',
      'print("own processes reached:", hit > 0)',
    ].join('\n');
    const [r, bystander] = await beside({ code });
    expect(bystander).toMatchObject({ status: 'ok', stdout: 'bystander done\n' });
    expect(r).toMatchObject({ status: 'ok', stdout: 'own processes reached: True\n' });
  });

  it('sees no other process: not its fork server, not another call', async () => {
    const [r, bystander] = await beside({
      code: 'import os\nprint(os.getppid(), sorted(int(p) for p in os.listdir("/proc") if p.isdigit()), os.getsid(0) == os.getpid())',
    });
    expect(bystander.status).toBe('ok');
    expect(r).toMatchObject({ status: 'ok', stdout: '0 [1] True\n' });
  });

  it("another call's loopback ports, abstract sockets, SysV IPC and files are not reachable", async () => {
    const tag = `agentrl-${process.pid}-${Date.now()}`;
    const key = 0x5a000000 + (process.pid % 0xffff);
    const port = 20_000 + (process.pid % 20_000);
    const msgget = `import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n`;
    const owner = pool.run({
      code: [
        'import socket, time, os',
        msgget,
        `tcp = socket.socket(); tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); tcp.bind(("127.0.0.1", ${port})); tcp.listen()`,
        `assert libc.msgget(${key}, 0o1666) >= 0`,
        `open("/tmp/${tag}", "w").write("secret"); open("/dev/shm/${tag}", "w").write("secret")`,
        'time.sleep(1.2)',
        'print("owner done")',
      ].join('\n'),
    });
    await sleep(400);
    const probe = await pool.run({
      code: [
        'import socket, os, ctypes',
        msgget,
        'def tcp():',
        '    try:',
        `        socket.create_connection(("127.0.0.1", ${port}), timeout=1); return "connected"`,
        '    except OSError as e:',
        '        return type(e).__name__',
        'def uds():',
        '    try:',
        '        s = socket.socket(socket.AF_UNIX)',
        `        s.connect("\\0${tag}"); return "connected"`,
        '    except OSError as e:',
        '        return type(e).__name__',
        `print(tcp(), uds(), libc.msgget(${key}, 0) >= 0, os.path.exists("/tmp/${tag}"), os.path.exists("/dev/shm/${tag}"))`,
      ].join('\n'),
    });
    expect(await owner).toMatchObject({ status: 'ok', stdout: 'owner done\n' });
    expect(probe).toMatchObject({
      status: 'ok',
      // no call may open a unix socket at all (issue 23, classes 4 and 6): the seccomp filter refuses it
      stdout: 'ConnectionRefusedError PermissionError False False False\n',
    });
  });

  it("networkPerCall: false shares the fork server's (offline) network namespace, not unix sockets", async () => {
    const shared = await new EmbeddedPool({
      servers: 1,
      preload: [],
      leanServer: false,
      networkPerCall: false,
    }).start();
    try {
      const port = 20_000 + ((process.pid + 7) % 20_000);
      const owner = shared.run({
        code: `import socket, time\ns = socket.socket(); s.bind(("127.0.0.1", ${port})); s.listen()\ntime.sleep(1)`,
      });
      await sleep(400);
      const probe = await shared.run({
        code: `import socket\nsocket.create_connection(("127.0.0.1", ${port})); print("connected")\nsocket.socket(socket.AF_UNIX)`,
      });
      expect(probe.stdout).toBe('connected\n');
      expect(probe.stderr).toContain('PermissionError: [Errno 13] Permission denied');
      expect((await owner).status).toBe('ok');
    } finally {
      await shared.close();
    }
  });

  it('a call still reaches its own loopback (a local server inside one call works)', async () => {
    const r = await pool.run({
      code: [
        'import socket, threading',
        's = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()',
        'threading.Thread(target=lambda: s.accept()[0].sendall(b"hi"), daemon=True).start()',
        'print(socket.create_connection(s.getsockname()).recv(2))',
      ].join('\n'),
    });
    expect(r).toMatchObject({ status: 'ok', stdout: "b'hi'\n" });
  });

  it('a SIGKILL from outside the call is reported as KILLED, not as memory_exceeded', async () => {
    const [server] = pool.serverPids as number[];
    const before = new Set(descendantsOf([server as number]));
    const call = pool.run({ code: 'import time\nprint("up", flush=True)\ntime.sleep(20)' });
    let fresh: number[] = [];
    for (let i = 0; i < 100 && fresh.length === 0; i++) {
      await sleep(50);
      fresh = descendantsOf([server as number]).filter((p) => !before.has(p));
    }
    expect(fresh).toHaveLength(1); // the call's pid 1 (it starts no process of its own)
    await sleep(300); // past its setup: it has printed "up" (a kill during setup would race the print)
    process.kill(fresh[0] as number, 'SIGKILL'); // what the host's OOM killer or an operator would do
    const r = await call;
    expect(r).toMatchObject({ status: 'sandbox_error', signal: 'SIGKILL', stdout: 'up\n' });
    expect(r.error?.code).toBe('EXECUTOR_KILLED');
    expect(r.stderr).toContain('killed by SIGKILL from outside its sandbox');
  });
});

describe('the channel between a call and its fork server (issue 14, item 3)', () => {
  const payloads = ['[1]', '1e999', '"x"', '{"sandbox": "fake"}', '{"memory": true}', 'x'.repeat(100_000)];

  for (const payload of payloads) {
    it(`writing ${payload.slice(0, 24)} to fd 3 neither fails other calls nor fakes a status`, async () => {
      const [r, bystander] = await beside({
        code: `import os\nos.write(3, ${JSON.stringify(payload)}.encode())`,
      });
      // Before the fix the first three crashed forkserver.py (every call in flight: WORKER_CRASHED) and
      // the last two faked sandbox_error / memory_exceeded. Now fd 3 is closed before user code runs.
      expect(bystander).toMatchObject({ status: 'ok', stdout: 'bystander done\n' });
      expect(r.status).toBe('runtime_error');
      expect(r.stderr).toContain('OSError: [Errno 9] Bad file descriptor');
    });
  }

  it('a fd the call opens as 3 is just a file', async () => {
    const r = await pool.run({
      code: 'import os\nfd = os.open("/tmp/f", os.O_CREAT | os.O_WRONLY)\nprint(fd)\nos.write(fd, b\'{"sandbox": "fake"}\')',
    });
    expect(r).toMatchObject({ status: 'ok', stdout: '3\n' });
  });

  it('the fork server answers every well-formed request whatever other lines it is sent', async () => {
    // The server itself, outside bubblewrap (as sandbox: "none" runs it), fed junk lines between two calls.
    const proc = spawn('python3', ['-I', join(FORKSERVER_DIR, 'forkserver.py')], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const lines: Record<string, unknown>[] = [];
    let buf = '';
    proc.stdout.setEncoding('utf8').on('data', (c: string) => {
      buf += c;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        lines.push(JSON.parse(buf.slice(0, nl)));
        buf = buf.slice(nl + 1);
      }
    });
    const limits = { stdin: '', timeoutMs: 5000, cpuMs: 5000, memoryMb: 256, maxOutputBytes: 4096 };
    const full = {
      ...limits,
      maxProcs: 16,
      maxFileMb: 8,
      tmpMb: 16,
      truncate: 'middle',
      lastExpression: false,
    };
    const send = (line: string) => proc.stdin.write(`${line}\n`);
    send(JSON.stringify({ id: 1, code: 'print(1)', ...full }));
    for (const junk of ['[1]', '1e999', '"x"', '{not json', 'null', '{"id": 2}', '{"id": 3, "code": 5}'])
      send(junk);
    send(JSON.stringify({ id: 4, code: 'print(4)', ...full }));
    for (let i = 0; i < 100 && lines.filter((l) => 'id' in l).length < 4; i++) await sleep(50);
    proc.stdin.end();
    if (proc.exitCode === null && proc.signalCode === null) await new Promise((r) => proc.once('exit', r));
    const byId = new Map(lines.filter((l) => 'id' in l).map((l) => [l.id, l]));
    expect(byId.get(1)).toMatchObject({ status: 'ok', stdout: '1\n' });
    expect(byId.get(4)).toMatchObject({ status: 'ok', stdout: '4\n' });
    expect(byId.get(2)).toMatchObject({ status: 'sandbox_error' });
    expect(byId.get(3)).toMatchObject({ status: 'sandbox_error' });
    expect(byId.get(2)?.stderr).toContain('bad request');
  });
});
