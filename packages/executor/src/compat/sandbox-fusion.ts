import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { RunRequest, RunResult } from '../types.js';
import { type CompatOptions, parseBody, useFastApiErrors } from './fastapi.js';
import {
  type DrivenLanguage,
  drivenCall,
  drivenResponse,
  SANDBOX_FUSION_OUTPUT_BYTES,
  type SandboxFusionResponse,
} from './sandbox-fusion-run.js';

// SandboxFusion (bytedance/SandboxFusion), the code sandbox verl's reward functions call. Request and
// response: sandbox/server/sandbox_api.py (RunCodeRequest, RunCodeResponse, parse_run_status); languages
// and CommandRunResult: sandbox/runners/types.py; output capture: sandbox/runners/base.py.

export { SANDBOX_FUSION_OUTPUT_BYTES };

/** sandbox/runners/types.py `Language`. */
const LANGUAGES = [
  'python',
  'cpp',
  'nodejs',
  'go',
  'go_test',
  'java',
  'php',
  'csharp',
  'bash',
  'typescript',
  'sql',
  'rust',
  'cuda',
  'lua',
  'R',
  'perl',
  'D_ut',
  'ruby',
  'scala',
  'julia',
  'pytest',
  'junit',
  'kotlin_script',
  'jest',
  'verilog',
  'python_gpu',
  'lean',
  'swift',
  'racket',
] as const;

/** sandbox/server/sandbox_api.py `RunCodeRequest`, its defaults included. */
export const SandboxFusionRequestSchema = z.object({
  compile_timeout: z.number().default(10).describe('seconds; no compile step here'),
  run_timeout: z.number().default(10).describe('seconds'),
  memory_limit_MB: z.number().int().default(-1).describe('-1 (default) or 0: no limit'),
  code: z.string(),
  stdin: z.string().nullish(),
  language: z
    .enum(LANGUAGES)
    .describe("'python', 'cpp' and 'bash' run; the others are answered SandboxError"),
  files: z
    .record(z.string(), z.string().nullable())
    .default({})
    .describe('relative path -> base64 content, restored into the working directory before the run'),
  fetch_files: z
    .array(z.string())
    .default([])
    .describe('relative paths read back after the run, base64, in the response `files`'),
  args: z.array(z.string()).default([]).describe('pytest arguments; ignored'),
});
export type SandboxFusionRequest = z.infer<typeof SandboxFusionRequestSchema>;

/** The languages that run here: python in the warm fork server, all three through the driver. */
const DRIVEN: readonly string[] = ['python', 'cpp', 'bash'] satisfies DrivenLanguage[];

/** One request planned: the executor call and how its result becomes a RunCodeResponse, or why it is refused. */
export type SandboxFusionPlan =
  | { call: RunRequest; answer: (r: RunResult) => SandboxFusionResponse }
  | { refused: string };

/**
 * Plain python runs as the executor's own call (warm, preloads kept); cpp, bash, and python with files or
 * fetch_files run through the driver (src/compat/sandbox-fusion-run.ts), in the same sandbox.
 */
export function planSandboxFusion(q: SandboxFusionRequest): SandboxFusionPlan {
  if (!DRIVEN.includes(q.language)) {
    return {
      refused: `executor: language '${q.language}' is not supported here; this executor runs 'python', 'cpp' and 'bash'`,
    };
  }
  const withFiles = Object.keys(q.files).length > 0 || q.fetch_files.length > 0;
  if (q.language === 'python' && !withFiles) return { call: fromSandboxFusion(q), answer: toSandboxFusion };
  try {
    return { call: drivenCall({ ...q, language: q.language as DrivenLanguage }), answer: drivenResponse };
  } catch (error) {
    return { refused: `executor: ${(error as Error).message}` };
  }
}

/** The executor call for a plain python request. */
export function fromSandboxFusion(q: SandboxFusionRequest): RunRequest {
  return {
    code: q.code,
    stdin: q.stdin ?? '',
    timeoutMs: Math.round(q.run_timeout * 1000),
    // -1 or 0: no limit of its own, which here means the executor's own memoryMb (also its ceiling)
    ...(q.memory_limit_MB > 0 && { memoryMb: q.memory_limit_MB }),
    maxOutputBytes: SANDBOX_FUSION_OUTPUT_BYTES,
    truncate: 'head',
  };
}

/** `RunCodeResponse`, statuses as parse_run_status derives them. */
export function toSandboxFusion(r: RunResult): SandboxFusionResponse {
  const crashed = r.status === 'sandbox_error';
  const runStatus = r.status === 'timeout' ? 'TimeLimitExceeded' : crashed ? 'Error' : 'Finished';
  const status = crashed
    ? 'SandboxError'
    : runStatus === 'Finished' && r.exitCode === 0
      ? 'Success'
      : 'Failed';
  return {
    status,
    message: crashed ? r.stderr : '',
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

/** What run_code answers when the sandbox side fails (its own `except Exception` branch). */
export function sandboxFusionError(message: string): SandboxFusionResponse {
  return {
    status: 'SandboxError',
    message,
    compile_result: null,
    run_result: null,
    executor_pod_name: null,
    files: {},
  };
}

/** SandboxFusion's POST /run_code as a fastify plugin. */
export async function sandboxFusionPlugin(app: FastifyInstance, opts: CompatOptions): Promise<void> {
  useFastApiErrors(app);
  app.post('/run_code', async (req, reply) => {
    const q = parseBody(SandboxFusionRequestSchema, req.body);
    const plan = planSandboxFusion(q);
    if ('refused' in plan) return sandboxFusionError(plan.refused);
    if (!opts.admit(1)) {
      return reply
        .code(opts.overloadStatus ?? 504)
        .header('retry-after', '1')
        .send(sandboxFusionError('queue full; retry later'));
    }
    try {
      const [r] = await opts.runAll([plan.call], reply);
      return plan.answer(r as RunResult);
    } catch (error) {
      return sandboxFusionError((error as Error).message); // e.g. a run_timeout over the executor's ceiling
    }
  });
}
