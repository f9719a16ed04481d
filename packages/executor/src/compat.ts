import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { RunRequest, RunResult } from './types.js';

/** code-judge (used by rStar2-Agent) submission: POST /run, and items of /run/batch, /run/long-batch. */
export const CodeJudgeSubmissionSchema = z.object({
  sub_id: z.string().nullish().describe('caller id, echoed back; generated when absent'),
  type: z.literal('python').describe('language; this executor runs Python only'),
  solution: z.string().describe('the program'),
  input: z.string().nullish().describe('standard input'),
  expected_output: z
    .string()
    .nullish()
    .describe('when given, success also requires stdout to match (trimmed)'),
});
export type CodeJudgeSubmission = z.infer<typeof CodeJudgeSubmissionSchema>;

export const CodeJudgeBatchSchema = z.object({
  sub_id: z.string().nullish(),
  type: z.literal('batch').default('batch'),
  submissions: z.array(CodeJudgeSubmissionSchema),
});

export interface CodeJudgeResult {
  sub_id: string;
  success: boolean;
  run_success: boolean;
  cost: number;
  stdout: string;
  stderr: string;
  reason: '' | 'worker_timeout' | 'queue_timeout' | 'internal_error';
}

export function fromCodeJudge(s: CodeJudgeSubmission): RunRequest {
  return { code: s.solution, stdin: s.input ?? '' };
}

export function toCodeJudge(s: CodeJudgeSubmission, r: RunResult): CodeJudgeResult {
  const ran = r.status === 'ok' || r.status === 'output_truncated';
  const matches = s.expected_output == null || r.stdout.trim() === s.expected_output.trim();
  return {
    sub_id: s.sub_id ?? randomUUID(),
    success: ran && matches,
    run_success: ran,
    cost: r.wallMs / 1000,
    stdout: r.stdout,
    stderr: r.stderr,
    reason: r.status === 'timeout' ? 'worker_timeout' : r.status === 'sandbox_error' ? 'internal_error' : '',
  };
}

/** SandboxFusion POST /run_code request (the fields this executor honours). */
export const SandboxFusionRequestSchema = z.object({
  code: z.string(),
  language: z.literal('python').default('python'),
  run_timeout: z.number().positive().nullish().describe('seconds'),
  memory_limit_MB: z.number().positive().nullish(),
  stdin: z.string().nullish(),
});
export type SandboxFusionRequest = z.infer<typeof SandboxFusionRequestSchema>;

export function fromSandboxFusion(q: SandboxFusionRequest): RunRequest {
  const req: RunRequest = { code: q.code, stdin: q.stdin ?? '' };
  if (q.run_timeout != null) req.timeoutMs = Math.round(q.run_timeout * 1000);
  if (q.memory_limit_MB != null) req.memoryMb = Math.round(q.memory_limit_MB);
  return req;
}

export function toSandboxFusion(r: RunResult) {
  const runStatus =
    r.status === 'timeout' ? 'TimeLimitExceeded' : r.status === 'sandbox_error' ? 'Error' : 'Finished';
  const status = r.status === 'sandbox_error' ? 'SandboxError' : r.exitCode === 0 ? 'Success' : 'Failed';
  return {
    status,
    message: r.error?.message ?? '',
    compile_result: null,
    run_result: {
      status: runStatus,
      execution_time: r.wallMs / 1000,
      return_code: r.exitCode,
      stdout: r.stdout,
      stderr: r.stderr,
    },
    executor_pod_name: null,
    files: {},
  };
}
