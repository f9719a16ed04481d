import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { RunRequest, RunResult } from '../types.js';
import { type CompatOptions, parseBody, useFastApiErrors } from './fastapi.js';

// SandboxFusion (bytedance/SandboxFusion), the code sandbox verl's reward functions call. Request and
// response: sandbox/server/sandbox_api.py (RunCodeRequest, RunCodeResponse, parse_run_status); languages
// and CommandRunResult: sandbox/runners/types.py; output capture: sandbox/runners/base.py.

/** sandbox/runners/base.py _MAX_CAPTURED_OUTPUT_BYTES: the first 1 MiB of each stream is kept. */
export const SANDBOX_FUSION_OUTPUT_BYTES = 1024 * 1024;
/** memory_limit_MB <= 0 is "no limit" there; here it lifts the limit to the executor's ceiling. */

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
  language: z.enum(LANGUAGES).describe("'python' runs; the others are answered SandboxError"),
  files: z.record(z.string(), z.string().nullable()).default({}).describe('must be empty here'),
  fetch_files: z.array(z.string()).default([]).describe('must be empty here'),
  args: z.array(z.string()).default([]).describe('pytest arguments; ignored'),
});
export type SandboxFusionRequest = z.infer<typeof SandboxFusionRequestSchema>;

/** The executor call for one request, or why it is refused (answered with status SandboxError). */
export function fromSandboxFusion(q: SandboxFusionRequest): RunRequest | { refused: string } {
  if (q.language !== 'python') {
    return {
      refused: `executor: language '${q.language}' is not supported here; this executor runs 'python' only`,
    };
  }
  if (Object.values(q.files).some((v) => v != null) || q.fetch_files.length > 0) {
    return { refused: 'executor: files and fetch_files are not supported here; send them empty' };
  }
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
export function toSandboxFusion(r: RunResult) {
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
export function sandboxFusionError(message: string) {
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
    const call = fromSandboxFusion(q);
    if ('refused' in call) return sandboxFusionError(call.refused);
    if (!opts.admit(1)) {
      return reply
        .code(opts.overloadStatus ?? 504)
        .header('retry-after', '1')
        .send(sandboxFusionError('queue full; retry later'));
    }
    try {
      const [r] = await opts.runAll([call], reply);
      return toSandboxFusion(r as RunResult);
    } catch (error) {
      return sandboxFusionError((error as Error).message); // e.g. a run_timeout over the executor's ceiling
    }
  });
}
