import { ToolOutcomeSchema } from '@agentrl/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExecutor } from '../src/create-executor.js';
import { EmbeddedPool } from '../src/embedded-pool.js';
import { ExecutorError } from '../src/errors.js';
import { descendantsOf, sleep } from './processes.js';

let pool: EmbeddedPool;
beforeAll(async () => {
  pool = await new EmbeddedPool({ timeoutMs: 5000, servers: 1 }).start();
});
afterAll(() => pool?.close());

describe('embedded pool: ordinary calls', () => {
  it('runs code and returns a ToolOutcome with the extras', async () => {
    const r = await pool.run({ code: 'print(sum(range(1000)))' });
    expect(ToolOutcomeSchema.parse(r)).toBeTruthy();
    expect(r).toMatchObject({ status: 'ok', stdout: '499500\n', stderr: '', exitCode: 0, signal: null });
    expect(r.cpuMs).toBeGreaterThan(0);
    expect(r.latencyMs).toBeGreaterThanOrEqual(r.wallMs - 1);
  });

  it('feeds stdin', async () => {
    const r = await pool.run({ code: 'print(input()[::-1]); print(input())', stdin: 'abc\nsecond\n' });
    expect(r).toMatchObject({ status: 'ok', stdout: 'cba\nsecond\n' });
  });

  it('prints the last expression when asked, like a notebook cell', async () => {
    const on = await pool.run({ code: 'x = 6\nx * 7', lastExpression: true });
    expect(on.stdout).toBe('42\n');
    const off = await pool.run({ code: 'x = 6\nx * 7' });
    expect(off.stdout).toBe('');
    const none = await pool.run({ code: 'print("a")\nNone', lastExpression: true });
    expect(none.stdout).toBe('a\n');
  });

  it('reports exceptions as runtime_error with a python -c style traceback', async () => {
    const r = await pool.run({ code: 'def f():\n    return 1/0\nf()' });
    expect(r.status).toBe('runtime_error');
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain('File "<string>", line 2, in f');
    expect(r.stderr).toContain('ZeroDivisionError: division by zero');
    expect(r.stderr).not.toContain('forkserver');
  });

  it('maps sys.exit codes', async () => {
    expect(await pool.run({ code: 'import sys; sys.exit(3)' })).toMatchObject({
      status: 'runtime_error',
      exitCode: 3,
    });
    expect(await pool.run({ code: 'import sys; sys.exit(0)' })).toMatchObject({ status: 'ok', exitCode: 0 });
    expect(await pool.run({ code: 'raise SystemExit("bye")' })).toMatchObject({
      status: 'runtime_error',
      exitCode: 1,
      stderr: 'bye\n',
    });
  });

  it('has numpy and sympy warm, and routes plain code to the lean server with the same result', async () => {
    const r = await pool.run({
      code: 'import sympy, numpy as np\nx = sympy.Symbol("x")\nprint(sympy.factor(x**2 - 1), int(np.arange(5).sum()))',
    });
    expect(r).toMatchObject({ status: 'ok', stdout: '(x - 1)*(x + 1) 10\n' });
    const dyn = await pool.run({ code: 'm = __import__("json")\nprint(m.dumps([1]))' });
    expect(dyn).toMatchObject({ status: 'ok', stdout: '[1]\n' });
  });

  it('starts every call from the same clean state', async () => {
    const a = await pool.run({
      code: 'import json, sys\njson.leak = 1\nsys.modules["leak"] = json\nopen("/tmp/mark", "w").write("x")\nGLOBAL = 5',
    });
    expect(a.status).toBe('ok');
    const b = await pool.run({
      code: 'import json, sys, os\nprint(hasattr(json, "leak"), "leak" in sys.modules, os.listdir("/tmp"), "GLOBAL" in globals())',
    });
    expect(b).toMatchObject({ status: 'ok', stdout: 'False False [] False\n' });
  });

  it('keeps output head and tail with a marker when over the cap', async () => {
    const small = await new EmbeddedPool({
      maxOutputBytes: 100,
      servers: 1,
      leanServer: false,
      preload: [],
    }).start();
    try {
      const r = await small.run({ code: 'print("A" * 60 + "B" * 500 + "C" * 60)' });
      expect(r.status).toBe('output_truncated');
      expect(r.stdoutBytes).toBe(621);
      expect(r.stdout).toBe(`${'A'.repeat(50)}\n...[521 bytes truncated]...\n${'C'.repeat(49)}\n`);
      const failed = await small.run({ code: 'print("x" * 1000)\nraise ValueError' });
      expect(failed.status).toBe('runtime_error'); // a failure stays a failure when truncated
    } finally {
      await small.close();
    }
  });

  it('runs a batch in order and records latency stats', async () => {
    const rs = await pool.runBatch(Array.from({ length: 20 }, (_, i) => ({ code: `print(${i} * 2)` })));
    expect(rs.map((r) => r.stdout)).toEqual(Array.from({ length: 20 }, (_, i) => `${i * 2}\n`));
    const s = pool.stats();
    expect(s.calls).toBeGreaterThanOrEqual(20);
    expect(s.latencyMs.p99).toBeGreaterThan(0);
    expect(s.byStatus.ok).toBeGreaterThanOrEqual(20);
  });

  it('rejects misuse with an actionable error', async () => {
    await expect(pool.run({ code: 42 as unknown as string })).rejects.toBeInstanceOf(ExecutorError);
    await expect(pool.run({ code: 'pass', timeoutMs: -1 })).rejects.toThrow(
      /timeoutMs must be an integer between/,
    );
    expect(() => new EmbeddedPool({ concurrency: 0 })).toThrow(/concurrency/);
  });

  it('answers calls of a fork server that dies with sandbox_error, then restarts it', async () => {
    const lone = await new EmbeddedPool({ servers: 1, leanServer: false, preload: [] }).start();
    try {
      const running = lone.run({ code: 'import time\ntime.sleep(10)' });
      await new Promise((r) => setTimeout(r, 200));
      process.kill(lone.serverPids[0] as number, 'SIGKILL');
      const r = await running;
      expect(r.status).toBe('sandbox_error');
      expect(r.error?.code).toBe('EXECUTOR_WORKER_CRASHED');
      expect(r.stderr).toMatch(/fork server exited/);
      expect(await lone.run({ code: 'print("back")' })).toMatchObject({ status: 'ok', stdout: 'back\n' });
    } finally {
      await lone.close();
    }
  });

  // Without bubblewrap the fork server needs real root to build each call's namespaces.
  it.skipIf(process.getuid?.() !== 0)(
    'sandbox "none" (needs root) still isolates each call: own namespaces, nobody, limits',
    async () => {
      const bare = await new EmbeddedPool({ servers: 1, sandbox: 'none', preload: [] }).start();
      try {
        const r = await bare.run({
          code: 'import os\nprint(os.getpid(), os.getuid(), os.listdir("/tmp"))\nopen("/etc/shadow")',
        });
        expect(r.status).toBe('runtime_error');
        expect(r.stdout).toBe('1 65534 []\n');
        expect(r.stderr).toContain('PermissionError');
      } finally {
        await bare.close();
      }
    },
  );
});

describe('createExecutor: fork servers', () => {
  it('honours `servers` and spreads a burst over them (issue 14, item 5)', async () => {
    // Before the fix `servers` was dropped on the way to the pool, and in-flight calls were counted only
    // after an await, so every call of a burst went to fork server 0.
    const ex = (await createExecutor({
      servers: 3,
      concurrency: 6,
      preload: [],
      leanServer: false,
    })) as EmbeddedPool;
    try {
      const servers = ex.serverPids as number[];
      expect(servers).toHaveLength(3);
      const burst = ex.runBatch(Array.from({ length: 6 }, () => ({ code: 'import time\ntime.sleep(1.5)' })));
      await sleep(700);
      // Each call is one process under its server's bwrap tree (bwrap, its pid 1, the Python server, its
      // zygote, calls).
      const perServer = servers.map((pid) => descendantsOf([pid]).length - 3);
      expect(perServer).toEqual([2, 2, 2]);
      expect((await burst).map((r) => r.status)).toEqual(Array(6).fill('ok'));
    } finally {
      await ex.close();
    }
  });
});

describe('per-call output caps', () => {
  it('truncate: head keeps the first maxOutputBytes, and how stderr ends still decides the status', async () => {
    const r = await pool.run({
      code: 'import sys\nprint("a" * 5000)\nsys.stderr.write("e" * 300000 + "\\n")\nx = bytearray(10**12)',
      maxOutputBytes: 1000,
      truncate: 'head',
    });
    expect(r).toMatchObject({
      status: 'memory_exceeded',
      stdout: 'a'.repeat(1000),
      stderrBytes: expect.any(Number),
    });
    expect(r.stderr).toBe('e'.repeat(1000));
    expect(r.stdoutBytes).toBe(5001);
    await expect(pool.run({ code: '', truncate: 'tail' as 'head' })).rejects.toThrow(
      /truncate must be "middle" or "head"/,
    );
  });
});
