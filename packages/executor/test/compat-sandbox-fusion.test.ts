import type { ChildProcess } from 'node:child_process';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitOf, spawnBin, waitForLine } from './bin-process.js';

// Request and response shapes as SandboxFusion defines them (bytedance/SandboxFusion
// sandbox/server/sandbox_api.py RunCodeRequest / RunCodeResponse, sandbox/runners/types.py,
// sandbox/runners/base.py _MAX_CAPTURED_OUTPUT_BYTES) and as verl sends them (volcengine/verl
// verl/utils/reward_score/sandbox_fusion/utils.py `call_sandbox_api`).
// The server runs as its own process, as a deployment runs it (`agentrl-executor serve`), with the
// executor's own defaults: 64 KiB output cap, 1024 MB memory.
let proc: ChildProcess;
let url: string;
beforeAll(async () => {
  proc = spawnBin(['serve', '--port', '0', '--servers', '1', '--timeout-ms', '5000', '--preload', '']);
  url = (await waitForLine(proc, /http:\/\/[0-9.]+:\d+/)) as string;
}, 60_000);
afterAll(async () => {
  proc?.kill('SIGTERM');
  if (proc) await exitOf(proc);
});

async function runCode(body: unknown) {
  const res = await request(`${url}/run_code`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, body: (await res.body.json()) as SandboxFusionBody };
}
/** RunCodeResponse, or FastAPI's 422 body. */
type SandboxFusionBody = Record<string, unknown> & {
  status: string;
  message: string;
  run_result: {
    status: string;
    stdout: string;
    stderr: string;
    return_code: number | null;
    execution_time: number;
  };
  detail: Record<string, unknown>[];
};
/** verl's payload, field for field. */
const verl = (code: string, over: Record<string, unknown> = {}) => ({
  compile_timeout: 10,
  run_timeout: 5,
  code,
  stdin: null,
  memory_limit_MB: -1,
  language: 'python',
  files: {},
  fetch_files: [],
  ...over,
});

describe('SandboxFusion drop-in (issue 14, item 6)', () => {
  it("answers verl's call_sandbox_api payload in RunCodeResponse's shape", async () => {
    const ok = await runCode(verl('print(input())', { stdin: 'hi' }));
    expect(ok).toEqual({
      status: 200,
      body: {
        status: 'Success',
        message: '',
        compile_result: null,
        run_result: {
          status: 'Finished',
          execution_time: expect.any(Number),
          return_code: 0,
          stdout: 'hi\n',
          stderr: '',
        },
        executor_pod_name: null,
        files: {},
      },
    });
    const failed = await runCode(verl('raise SystemExit(3)'));
    expect(failed.body).toMatchObject({
      status: 'Failed',
      run_result: { status: 'Finished', return_code: 3 },
    });
    const tle = await runCode(
      verl('import time; print("x", flush=True); time.sleep(5)', { run_timeout: 0.3 }),
    );
    expect(tle.body).toMatchObject({
      status: 'Failed',
      run_result: { status: 'TimeLimitExceeded', return_code: null, stdout: 'x\n' },
    });
  });

  it('keeps the first 1 MiB of output, as SandboxFusion reads it', async () => {
    const r = await runCode(verl('import sys; sys.stdout.write("a" * (1 << 20) + "b" * (2 << 20))'));
    expect(r.body.status).toBe('Success');
    expect(r.body.run_result.stdout).toBe('a'.repeat(1 << 20)); // the head only, no marker
  });

  it("memory_limit_MB = -1 (its default) is the executor's own limit, also its ceiling; a positive one lowers it", async () => {
    const map = (mb: number) => `import mmap\nm = mmap.mmap(-1, ${mb} << 20)\nprint(len(m) >> 20)`;
    expect((await runCode(verl(map(256)))).body).toMatchObject({
      status: 'Success',
      run_result: { stdout: '256\n' },
    });
    const { memory_limit_MB: _m, ...unset } = verl(map(256));
    expect((await runCode(unset)).body.status).toBe('Success');
    // past the executor's 1024 MB: refused by its own limit, -1 or not (issue 23: no request lifts it)
    const big = await runCode(verl(map(4096)));
    expect(big.body).toMatchObject({ status: 'Failed', run_result: { return_code: 1 } });
    const limited = await runCode(verl(map(256), { memory_limit_MB: 128 }));
    expect(limited.body).toMatchObject({ status: 'Failed', run_result: { return_code: 1 } });
    expect(limited.body.run_result.stderr).toContain('Cannot allocate memory');
    const above = await runCode(verl(map(256), { memory_limit_MB: 4096 }));
    expect(above.body).toMatchObject({ status: 'SandboxError' });
    expect(above.body.message).toContain("memoryMb 4096 is above this executor's ceiling of 1024");
  });

  it('another language is refused for that request in its shape, not with an HTTP error', async () => {
    const r = await runCode(verl('package main', { language: 'go' }));
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      status: 'SandboxError',
      run_result: null,
      compile_result: null,
      files: {},
    });
    expect(r.body.message).toContain("language 'go' is not supported here");
    expect(r.body.message).toContain("runs 'python', 'cpp' and 'bash'");
  });

  it("rejects invalid requests with FastAPI's 422 {detail}", async () => {
    const noLanguage = await runCode({ code: 'print(1)' }); // `language` has no default there
    expect(noLanguage).toEqual({
      status: 422,
      body: { detail: [{ type: 'missing', loc: ['body', 'language'], msg: 'Field required', input: null }] },
    });
    const unknown = await runCode(verl('x', { language: 'cobol' }));
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail[0]).toMatchObject({
      type: 'literal_error',
      loc: ['body', 'language'],
      input: 'cobol',
    });
    const badTimeout = await runCode(verl('x', { run_timeout: 'soon' }));
    expect(badTimeout.body.detail[0]).toMatchObject({ type: 'float_type', loc: ['body', 'run_timeout'] });
  });
});

const b64 = (text: string) => Buffer.from(text).toString('base64');
const text = (base64: string | undefined) => Buffer.from(base64 ?? '', 'base64').toString();

describe('SandboxFusion languages cpp and bash (issue 25)', () => {
  it('compiles cpp with g++ -std=c++17 and runs it: compile_result and run_result as run_cpp fills them', async () => {
    const code =
      '#include <iostream>\nint main() { int a, b; std::cin >> a >> b; std::cout << a + b << "\\n"; }';
    const r = await runCode(verl(code, { language: 'cpp', stdin: '2 3' }));
    expect(r).toEqual({
      status: 200,
      body: {
        status: 'Success',
        message: '',
        compile_result: {
          status: 'Finished',
          execution_time: expect.any(Number),
          return_code: 0,
          stdout: '',
          stderr: '',
        },
        run_result: {
          status: 'Finished',
          execution_time: expect.any(Number),
          return_code: 0,
          stdout: '5\n',
          stderr: '',
        },
        executor_pod_name: null,
        files: {},
      },
    });
  }, 60_000);

  it('a compile error is Failed with the compiler output and no run_result', async () => {
    const r = await runCode(verl('int main() { return x; }', { language: 'cpp' }));
    expect(r.body).toMatchObject({
      status: 'Failed',
      run_result: null,
      compile_result: { status: 'Finished' },
    });
    const compile = r.body.compile_result as { return_code: number; stderr: string };
    expect(compile.return_code).not.toBe(0);
    expect(compile.stderr).toMatch(/error: .x. was not declared/);
  }, 60_000);

  it('runs bash with stdin; its exit code decides Success or Failed; run_timeout gives TimeLimitExceeded', async () => {
    const r = await runCode(
      verl('read x; echo "got $x"; echo oops >&2; exit 3', { language: 'bash', stdin: 'hi\n' }),
    );
    expect(r.body).toMatchObject({
      status: 'Failed',
      compile_result: null,
      run_result: { status: 'Finished', return_code: 3, stdout: 'got hi\n', stderr: 'oops\n' },
    });
    const slow = await runCode(verl('echo start; sleep 30 & wait', { language: 'bash', run_timeout: 0.5 }));
    expect(slow.body).toMatchObject({
      status: 'Failed',
      run_result: { status: 'TimeLimitExceeded', return_code: null, stdout: 'start\n' },
    });
    expect(slow.body.run_result.execution_time).toBeLessThan(3);
  }, 60_000);

  it('bash and cpp programs have the sandbox Python has: uid nobody, no host files, no network, no unix sockets', async () => {
    const probe = [
      'id -u',
      'test -e /etc/shadow && echo shadow-visible || echo no-shadow',
      `test -e ${process.cwd()}/package.json && echo repo-visible || echo no-repo`,
      '(exec 3<>/dev/tcp/1.1.1.1/80) 2>/dev/null && echo online || echo offline',
      'python3 -c "import socket; socket.socket(socket.AF_UNIX)" 2>&1 | tail -1',
    ].join('\n');
    const r = await runCode(verl(probe, { language: 'bash' }));
    expect(r.body.run_result.stdout).toBe(
      '65534\nno-shadow\nno-repo\noffline\nPermissionError: [Errno 13] Permission denied\n',
    );
    const memfd = [
      '#include <sys/mman.h>',
      '#include <cstdio>',
      '#include <cerrno>',
      'int main() { int fd = memfd_create("x", 0); std::printf("%d %d\\n", fd, errno); }',
    ].join('\n');
    const c = await runCode(verl(memfd, { language: 'cpp' }));
    expect(c.body.run_result.stdout).toBe('-1 1\n'); // the seccomp filter refuses memfd_create with EPERM
  }, 60_000);

  it('nothing a program writes can pose as the result: its output is its own, the driver is out of reach', async () => {
    const forged = '{"compile": null, "run": {"status": "Finished", "return_code": 0}}';
    const r = await runCode(
      verl(
        `printf '%s' '${forged}'; printf '%s' '{"files": {"x": "eA=="}, "error": null}' >&2; echo x > /proc/1/fd/1 2>/dev/null || exit 9`,
        {
          language: 'bash',
        },
      ),
    );
    expect(r.body).toMatchObject({
      status: 'Failed',
      files: {},
      run_result: { return_code: 9, stdout: forged },
    });
    // the driver is not dumpable, so its /proc/1/fd is closed to the program
    expect(r.body.run_result.stderr).toMatch(
      /^\{"files": \{"x": "eA=="\}, "error": null\}.*\/proc\/1\/fd\/1: Permission denied\n$/,
    );
  }, 60_000);
});

describe('SandboxFusion files and fetch_files (issue 25)', () => {
  it('restores base64 files into the working directory and fetches files back, missing ones skipped', async () => {
    const code = [
      'a, b = map(int, open("data/in.txt").read().split())',
      'open("out.txt", "w").write(str(a * b))',
      'print(open("notes.md").read())',
    ].join('\n');
    const r = await runCode(
      verl(code, {
        files: {
          'data/in.txt': b64('6 7'),
          './notes.md': b64('# hi'),
          'skip.txt': null,
          'IGNORE_THIS_FILE.x': 'eA==',
        },
        fetch_files: ['out.txt', 'missing.txt', 'data/in.txt'],
      }),
    );
    expect(r.body).toMatchObject({
      status: 'Success',
      compile_result: null,
      run_result: { status: 'Finished', return_code: 0, stdout: '# hi\n' },
    });
    expect(Object.keys(r.body.files as object).sort()).toEqual(['data/in.txt', 'out.txt']);
    expect(text((r.body.files as Record<string, string>)['out.txt'])).toBe('42');
    const bash = await runCode(
      verl('ls; cat a.txt > b.txt; echo more >> b.txt', {
        language: 'bash',
        files: { 'a.txt': b64('one\n') },
        fetch_files: ['b.txt'],
      }),
    );
    expect(bash.body.run_result.stdout).toMatch(/^a\.txt\ntmp\w+\.sh\n$/);
    expect(text((bash.body.files as Record<string, string>)['b.txt'])).toBe('one\nmore\n');
    const cpp = await runCode(
      verl(
        '#include <fstream>\nint main() { std::ifstream f("n.txt"); int n; f >> n; std::ofstream("sq.txt") << n * n; }',
        {
          language: 'cpp',
          files: { 'n.txt': b64('12') },
          fetch_files: ['sq.txt'],
        },
      ),
    );
    expect(text((cpp.body.files as Record<string, string>)['sq.txt'])).toBe('144');
  }, 60_000);

  it('refuses paths out of the working directory, bad base64 and sizes over the limits, naming what was wrong', async () => {
    const refused = async (over: Record<string, unknown>) => {
      const r = await runCode(verl('print(1)', over));
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ status: 'SandboxError', run_result: null });
      return r.body.message;
    };
    expect(await refused({ files: { '../x': 'eA==' } })).toContain("has a '..' component");
    expect(await refused({ files: { 'a/../../x': 'eA==' } })).toContain("has a '..' component");
    expect(await refused({ files: { '/etc/x': 'eA==' } })).toContain('is absolute');
    expect(await refused({ files: { 'a.txt': 'not base64!' } })).toContain(
      'the content of "a.txt" is not base64',
    );
    expect(await refused({ fetch_files: ['../../etc/passwd'] })).toContain(
      'fetch_files: path "../../etc/passwd"',
    );
    const many = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`f${i}`, 'eA==']));
    expect(await refused({ files: many })).toContain('257 files, over the limit of 256');
    const big = Buffer.alloc(16 * 1024 * 1024 + 3).toString('base64');
    expect(await refused({ files: { 'big.bin': big } })).toContain('over the limit of 16777216');
  }, 60_000);

  it('a fetched link is not followed out of the working directory; a file over the fetch limit is an error', async () => {
    const links =
      'ln -s /agentrl/forkserver.py out; ln -s /etc/passwd pw; echo fine > real; ln -s real alias; mkdir d';
    const r = await runCode(
      verl(links, { language: 'bash', fetch_files: ['out', 'pw', 'alias', 'd', 'real'] }),
    );
    expect(r.body.status).toBe('Success');
    expect(Object.keys(r.body.files as object).sort()).toEqual(['alias', 'real']);
    const huge = await runCode(
      verl('head -c 1048577 /dev/zero > big.bin', { language: 'bash', fetch_files: ['big.bin'] }),
    );
    expect(huge.body).toMatchObject({ status: 'SandboxError', run_result: { return_code: 0 } });
    expect(huge.body.message).toBe("fetch_files: 'big.bin' is over the limit of 1048576 bytes a file");
  }, 60_000);

  // (this shows the fetched content, not the kill itself: a fetch that runs at once would also beat the
  // 0.3 s; the driver kills every leftover before fetching, so no delay of it could let one in)
  it('a file a background process would rewrite later is fetched as the program left it', async () => {
    const code = 'echo first > f.txt; (sleep 0.3; echo late > f.txt) > /dev/null 2>&1 & disown; exit 0';
    const r = await runCode(verl(code, { language: 'bash', fetch_files: ['f.txt'] }));
    expect(text((r.body.files as Record<string, string>)['f.txt'])).toBe('first\n');
  }, 60_000);
});
