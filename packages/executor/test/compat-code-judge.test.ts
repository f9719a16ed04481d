import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, serve } from '../src/serve.js';

// Request and response shapes as code-judge defines them (BytedTsinghua-SIA/code-judge, read in its fork
// xkz0777/code-judge at ca94fc9: app/model.py, app/main.py, app/worker_manager.py `judge()`, app/config.py)
// and as rStar2-Agent sends them (microsoft/rStar rstar2_agent/tools/code_judge_utils.py).
let server: RunningServer;
beforeAll(async () => {
  server = await serve({ port: 0, pool: { servers: 1, timeoutMs: 2000, preload: [], leanServer: false } });
});
afterAll(() => server?.close());

async function post(path: string, body: unknown, raw?: string) {
  const res = await request(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: raw ?? JSON.stringify(body),
  });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}
type Result = Record<string, unknown>;

describe('code-judge drop-in (issue 14, item 6)', () => {
  it("answers rStar2-Agent's tool calls on /run/long-batch as its client reads them", async () => {
    // code_judge_utils.py: {"type": "batch", "submissions": [{"type", "solution", "input"}]}; it reads
    // run_success, success, stdout, stderr, cost and reason of each result.
    const res = await post('/run/long-batch', {
      type: 'batch',
      submissions: [
        { type: 'python', solution: 'print(int(input()) * 2)', input: '21' },
        { type: 'python', solution: 'import sys; print("oops", file=sys.stderr); sys.exit(2)', input: null },
        { type: 'python', solution: 'while True: pass', input: '' },
      ],
    });
    expect(res.status).toBe(200);
    const results = res.body.results as Result[];
    expect(results[0]).toMatchObject({
      success: true,
      run_success: true,
      stdout: '42\n',
      stderr: '',
      reason: '',
    });
    expect(results[1]).toMatchObject({ success: false, run_success: false, stderr: 'oops\n', reason: '' });
    expect(results[2]).toMatchObject({ success: false, run_success: false, reason: 'worker_timeout' });
    for (const r of results) expect(typeof r.cost).toBe('number');
    expect(res.body.sub_id).toMatch(/^[0-9a-f-]{36}$/); // a uuid when the caller sends none (model_post_init)
  });

  it('compares expected_output with the whole stdout, and returns only its first 1,000 characters', async () => {
    // 200 000 numbers: ~1.3 MB of stdout, far past the executor's 64 KiB output cap.
    const solution = 'print("\\n".join(str(i) for i in range(200_000)))';
    const whole = Array.from({ length: 200_000 }, (_, i) => String(i)).join('\n');
    const same = await post('/run', {
      sub_id: 's1',
      type: 'python',
      solution,
      expected_output: `  ${whole}\n\n`,
    });
    expect(same.body).toMatchObject({ sub_id: 's1', success: true, run_success: true });
    expect((same.body.stdout as string).length).toBe(1000); // MAX_STDOUT_ERROR_LENGTH
    expect(same.body.stdout).toBe(`${whole}\n`.slice(0, 1000));
    // differs only in the middle: a head-and-tail comparison would call it a match
    const middle = whole.replace('\n100000\n', '\n100001\n');
    const differs = await post('/run', { type: 'python', solution, expected_output: middle });
    expect(differs.body).toMatchObject({ success: false, run_success: true });
    const long = await post('/run', { type: 'python', solution: 'import sys; sys.stderr.write("e" * 5000)' });
    expect(long.body.stderr).toBe('e'.repeat(1000));
  });

  it('/judge, /judge/batch and /judge/long-batch answer JudgeResult (no stdout, no stderr)', async () => {
    const one = await post('/judge', { type: 'python', solution: 'print(9)', expected_output: '9' });
    expect(Object.keys(one.body).sort()).toEqual(['cost', 'reason', 'run_success', 'sub_id', 'success']);
    expect(one.body).toMatchObject({ success: true, run_success: true, reason: '' });
    for (const path of ['/judge/batch', '/judge/long-batch']) {
      const batch = await post(path, {
        sub_id: 'b',
        type: 'batch',
        submissions: [
          { type: 'python', solution: 'print(9)', expected_output: '9' },
          { type: 'python', solution: 'print(8)', expected_output: '9' },
        ],
      });
      expect(batch.body.sub_id).toBe('b');
      expect((batch.body.results as Result[]).map((r) => [r.success, r.run_success, 'stdout' in r])).toEqual([
        [true, true, false],
        [false, true, false],
      ]);
    }
  });

  it('GET /ping answers "pong" as FastAPI does', async () => {
    const res = await request(`${server.url}/ping`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('application/json');
    expect(await res.body.json()).toBe('pong');
  });

  it('a math submission is refused per item, the rest of its batch runs', async () => {
    const res = await post('/run/batch', {
      type: 'batch',
      submissions: [
        { sub_id: 'py', type: 'python', solution: 'print(1)' },
        { sub_id: 'm', type: 'math', solution: '1+1' },
      ],
    });
    expect(res.status).toBe(200);
    const [py, m] = res.body.results as Result[];
    expect(py).toMatchObject({ sub_id: 'py', success: true, stdout: '1\n' });
    expect(m).toMatchObject({
      success: false,
      run_success: false,
      cost: 0,
      stdout: null,
      reason: 'internal_error',
    });
    expect(String(m?.stderr)).toContain("runs types 'python' and 'cpp'");
  });

  it('compiles and runs cpp submissions with g++ inside the sandbox, as cpp_executor.py does', async () => {
    const res = await post('/run/long-batch', {
      type: 'batch',
      submissions: [
        {
          type: 'cpp',
          solution:
            '#include <iostream>\nint main() { long long a; std::cin >> a; std::cout << a * 2 << std::endl; }',
          input: '21\n',
          expected_output: '42',
        },
        { type: 'cpp', solution: 'int main() { return undefined_name; }' },
        {
          type: 'cpp',
          solution:
            '#include <fstream>\nint main() { std::ofstream("/usr/x") << 1; return !std::ifstream("/usr/x"); }',
        },
      ],
    });
    const [ok, broken, confined] = res.body.results as Result[];
    expect(ok).toMatchObject({ success: true, run_success: true, stdout: '42\n', reason: '' });
    expect(broken).toMatchObject({ success: false, run_success: false });
    expect(String(broken?.stderr)).toMatch(/error: .undefined_name. was not declared/);
    expect(confined).toMatchObject({ run_success: false }); // the binary is as confined as Python code
  }, 60_000);

  it("rejects invalid requests with FastAPI's 422 {detail} naming the field", async () => {
    const missing = await post('/run', { type: 'python' });
    expect(missing).toEqual({
      status: 422,
      body: { detail: [{ type: 'missing', loc: ['body', 'solution'], msg: 'Field required', input: null }] },
    });
    const lang = await post('/judge/batch', {
      type: 'batch',
      submissions: [
        { type: 'python', solution: '' },
        { type: 'java', solution: '' },
      ],
    });
    expect(lang.status).toBe(422);
    expect(lang.body.detail).toEqual([
      {
        type: 'literal_error',
        loc: ['body', 'submissions', 1, 'type'],
        msg: "Input should be 'python', 'cpp' or 'math'",
        input: 'java',
        ctx: { expected: "'python', 'cpp' or 'math'" },
      },
    ]);
    const empty = await post('/run/batch', { type: 'batch', submissions: [] });
    expect(empty.status).toBe(422);
    expect((empty.body.detail as Result[])[0]).toMatchObject({
      type: 'too_short',
      loc: ['body', 'submissions'],
    });
    const notString = await post('/run', { type: 'python', solution: 5 });
    expect((notString.body.detail as Result[])[0]).toMatchObject({
      type: 'string_type',
      loc: ['body', 'solution'],
    });
    const json = await post('/run', undefined, '{"type": "python",');
    expect(json.status).toBe(422);
    expect((json.body.detail as Result[])[0]).toMatchObject({
      type: 'json_invalid',
      msg: 'JSON decode error',
    });
  });
});
