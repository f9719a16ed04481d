import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, serve } from '../src/serve.js';

// Request and response shapes as SandboxFusion defines them (bytedance/SandboxFusion
// sandbox/server/sandbox_api.py RunCodeRequest / RunCodeResponse, sandbox/runners/types.py,
// sandbox/runners/base.py _MAX_CAPTURED_OUTPUT_BYTES) and as verl sends them (volcengine/verl
// verl/utils/reward_score/sandbox_fusion/utils.py `call_sandbox_api`).
let server: RunningServer;
beforeAll(async () => {
  // the executor's own defaults: 64 KiB output cap, 1024 MB memory
  server = await serve({ port: 0, pool: { servers: 1, timeoutMs: 5000, preload: [], leanServer: false } });
});
afterAll(() => server?.close());

async function runCode(body: unknown) {
  const res = await request(`${server.url}/run_code`, {
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
  run_result: { status: string; stdout: string; stderr: string; return_code: number | null };
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
    const r = await runCode(verl('int main() {}', { language: 'cpp' }));
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      status: 'SandboxError',
      run_result: null,
      compile_result: null,
      files: {},
    });
    expect(r.body.message).toContain("language 'cpp' is not supported here");
    const files = await runCode(verl('print(1)', { files: { 'a.txt': 'eA==' } }));
    expect(files.body).toMatchObject({ status: 'SandboxError' });
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
