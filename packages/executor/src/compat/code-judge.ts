import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import type { RunRequest, RunResult } from '../types.js';
import { type CompatOptions, parseBody, useFastApiErrors } from './fastapi.js';

// code-judge (BytedTsinghua-SIA/code-judge; read in its fork xkz0777/code-judge at ca94fc9), the tool and
// reward server of rStar2-Agent. Request and response models: app/model.py; routes: app/main.py; the
// judging itself: app/worker_manager.py `judge()`; limits: app/config.py.

/** app/config.py MAX_STDOUT_ERROR_LENGTH: stdout and stderr are returned cut to this many characters. */
export const CODE_JUDGE_OUTPUT_CHARS = 1000;

/** app/model.py `Submission`. */
export const CodeJudgeSubmissionSchema = z.object({
  sub_id: z.string().nullish().describe('caller id, echoed back; a uuid when absent'),
  type: z
    .enum(['python', 'cpp', 'math'])
    .describe("language; 'python' and 'cpp' run, 'math' is refused per item"),
  options: z.record(z.string(), z.string()).nullish().describe('accepted and ignored'),
  solution: z.string().describe('the program'),
  input: z.string().nullish().describe('standard input'),
  expected_output: z
    .string()
    .nullish()
    .describe('when given, success also needs stdout.strip() to equal its strip()'),
});
export type CodeJudgeSubmission = z.infer<typeof CodeJudgeSubmissionSchema>;

/** app/model.py `BatchSubmission`. */
export const CodeJudgeBatchSchema = z.object({
  sub_id: z.string().nullish(),
  type: z.literal('batch').default('batch'),
  submissions: z.array(CodeJudgeSubmissionSchema).min(1),
});

/** app/model.py `SubmissionResult` (what /run answers); /judge answers it without stdout and stderr. */
export interface CodeJudgeResult {
  sub_id: string;
  success: boolean;
  run_success: boolean;
  cost: number;
  stdout: string | null;
  stderr: string | null;
  reason: '' | 'worker_timeout' | 'queue_timeout' | 'internal_error' | 'invalid_input';
}

/**
 * The executor call for one submission, or null when its language is not run here. code-judge compares
 * expected_output with the whole stdout, so the call keeps enough of it for that comparison: twice the
 * expected output plus 64 KiB (a longer stdout could only match by being padded with whitespace).
 */
export function fromCodeJudge(s: CodeJudgeSubmission): RunRequest | null {
  const output = { stdin: s.input ?? '', maxOutputBytes: compareCap(s), truncate: 'head' } as const;
  if (s.type === 'python') return { code: s.solution, ...output };
  if (s.type === 'cpp') return { code: cppDriver(s.solution), timeoutMs: 2 * CPP_STEP_MS, ...output };
  return null;
}

/**
 * app/libs/executors/cpp_executor.py compiles with `g++ -O2` under MAX_EXECUTION_TIME (10 s), then runs the
 * binary under it again. Here both happen inside the call's own sandbox: a small Python driver writes the
 * source to the call's /tmp, compiles it within 10 s and execs the binary in its place (so its exit status,
 * signal and limits are the call's own); the call's wall limit is the sum, 20 s.
 */
const CPP_STEP_MS = 10_000;
function cppDriver(source: string): string {
  return [
    'import os, subprocess, sys',
    `open("/tmp/source.cpp", "w").write(${JSON.stringify(source)})`,
    'try:',
    '    r = subprocess.run(["g++", "-O2", "/tmp/source.cpp", "-o", "/tmp/run"], stdin=subprocess.DEVNULL,',
    `                       capture_output=True, timeout=${CPP_STEP_MS / 1000})`,
    'except FileNotFoundError:',
    '    sys.exit("executor: g++ is not installed on this host; install it (apt-get install g++) to run cpp")',
    'except subprocess.TimeoutExpired:',
    `    sys.exit("executor: g++ took longer than ${CPP_STEP_MS / 1000} s")`,
    'if r.returncode != 0:',
    '    sys.stderr.write(r.stderr.decode(errors="replace"))',
    '    sys.exit(1)',
    'os.execv("/tmp/run", ["/tmp/run"])',
  ].join('\n');
}

export function toCodeJudge(s: CodeJudgeSubmission, r: RunResult, subId: string): CodeJudgeResult {
  const runSuccess = r.exitCode === 0; // worker_manager.py: run_success is "exit code 0"; a timeout has none
  const whole = r.stdoutBytes <= compareCap(s);
  const matches = s.expected_output == null || (whole && pyStrip(r.stdout) === pyStrip(s.expected_output));
  return {
    sub_id: subId,
    success: runSuccess && matches,
    run_success: runSuccess,
    cost: r.wallMs / 1000,
    stdout: firstChars(r.stdout, CODE_JUDGE_OUTPUT_CHARS),
    stderr: firstChars(r.stderr, CODE_JUDGE_OUTPUT_CHARS),
    reason: r.status === 'timeout' ? 'worker_timeout' : r.status === 'sandbox_error' ? 'internal_error' : '',
  };
}

/** A submission in a language this executor does not run: code-judge's answer to an executor failure. */
export function refusedSubmission(s: CodeJudgeSubmission, subId: string): CodeJudgeResult {
  return {
    sub_id: subId,
    success: false,
    run_success: false,
    cost: 0,
    stdout: null,
    stderr: `executor: type '${s.type}' is not supported here; this executor runs types 'python' and 'cpp'`,
    reason: 'internal_error',
  };
}

/** code-judge's routes as a fastify plugin: /run*, /judge* (no stdout/stderr), /ping, /status. */
export async function codeJudgePlugin(app: FastifyInstance, opts: CompatOptions): Promise<void> {
  useFastApiErrors(app);

  async function judge(subs: CodeJudgeSubmission[], reply: FastifyReply): Promise<CodeJudgeResult[]> {
    const requests = subs.map(fromCodeJudge);
    const runnable = requests.filter((q): q is RunRequest => q !== null);
    const ran = runnable.length > 0 ? await opts.runAll(runnable, reply) : [];
    let next = 0;
    return subs.map((s, i) => {
      const subId = s.sub_id ?? randomUUID();
      return requests[i] === null
        ? refusedSubmission(s, subId)
        : toCodeJudge(s, ran[next++] as RunResult, subId);
    });
  }
  const busy = (reply: FastifyReply) =>
    reply
      .code(opts.overloadStatus ?? 504)
      .header('retry-after', '1')
      .send({ detail: 'queue full; retry later' });
  const withoutOutput = ({ stdout: _o, stderr: _e, ...rest }: CodeJudgeResult) => rest;

  const one = (strip: boolean) => async (req: { body: unknown }, reply: FastifyReply) => {
    const sub = parseBody(CodeJudgeSubmissionSchema, req.body);
    if (!opts.admit(1)) return busy(reply);
    const [r] = (await judge([sub], reply)) as [CodeJudgeResult];
    return strip ? withoutOutput(r) : r;
  };
  const batch = (strip: boolean) => async (req: { body: unknown }, reply: FastifyReply) => {
    const b = parseBody(CodeJudgeBatchSchema, req.body);
    if (!opts.admit(b.submissions.length)) return busy(reply);
    const results = await judge(b.submissions, reply);
    return { sub_id: b.sub_id ?? randomUUID(), results: strip ? results.map(withoutOutput) : results };
  };

  app.get('/ping', (_req, reply) => reply.type('application/json').send(JSON.stringify('pong')));
  app.post('/run', one(false));
  app.post('/run/batch', batch(false));
  app.post('/run/long-batch', batch(false));
  app.post('/judge', one(true));
  app.post('/judge/batch', batch(true));
  app.post('/judge/long-batch', batch(true));
  app.get('/status', async () => ({ queue: opts.pending(), num_workers: await opts.workers() }));
}

function compareCap(s: CodeJudgeSubmission): number {
  const expected = s.expected_output == null ? 0 : Buffer.byteLength(s.expected_output);
  return Math.min(64 * 1024 * 1024, 2 * expected + 64 * 1024);
}

/** The first `n` characters (code points, as Python slices a str). */
function firstChars(text: string, n: number): string {
  let out = '';
  let count = 0;
  for (const ch of text) {
    if (count++ === n) break;
    out += ch;
  }
  return out;
}

/** Python's str.strip(): the characters str.isspace() accepts, which differ from JS's trim() in a few. */
export function pyStrip(text: string): string {
  return text.replace(PY_SPACE_EDGES, '');
}
const PY_SPACE =
  '\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const PY_SPACE_EDGES = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, 'g');
