import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FORKSERVER_DIR } from '../sandbox-spec.js';
import type { RunRequest, RunResult } from '../types.js';
import { filesToFetch, filesToRestore, SANDBOX_FUSION_FILE_LIMITS } from './sandbox-fusion-files.js';

// The requests SandboxFusion runs through a compile/run pair in a temporary directory
// (sandbox/runners/major.py run_cpp, run_bash, and run_python with files): here one executor call whose code
// is python/sandbox_fusion_run.py. It restores the files, compiles and runs in the call's own sandbox, and
// answers with the compile and run results (stdout) and the fetched files (stderr), so every byte the
// program writes stays in its own capture and nothing it prints can pose as a result.

/** sandbox/runners/base.py _MAX_CAPTURED_OUTPUT_BYTES: the first 1 MiB of each stream is kept. */
export const SANDBOX_FUSION_OUTPUT_BYTES = 1024 * 1024;

/** The languages run by the driver; python goes there too when it has files or fetch_files. */
export type DrivenLanguage = 'python' | 'cpp' | 'bash';

/** Wall time the driver may spend around the compile and the run (start, restore, fetch). */
const DRIVER_SLACK_MS = 5000;

const DRIVER = readFileSync(join(FORKSERVER_DIR, 'sandbox_fusion_run.py'), 'utf8');

/** sandbox/runners/types.py `CommandRunResult`. */
export interface CommandRunResult {
  status: 'Finished' | 'TimeLimitExceeded' | 'Error';
  execution_time: number | null;
  return_code: number | null;
  stdout: string | null;
  stderr: string | null;
}

/** `RunCodeResponse`. */
export interface SandboxFusionResponse {
  status: 'Success' | 'Failed' | 'SandboxError';
  message: string;
  compile_result: CommandRunResult | null;
  run_result: CommandRunResult | null;
  executor_pod_name: string | null;
  files: Record<string, string>;
}

export interface DrivenRequest {
  language: DrivenLanguage;
  code: string;
  stdin?: string | null | undefined;
  compile_timeout: number;
  run_timeout: number;
  memory_limit_MB: number;
  files: Record<string, string | null>;
  fetch_files: string[];
}

/** The executor call that runs `q` through the driver; throws a message when its files break a rule. */
export function drivenCall(q: DrivenRequest): RunRequest {
  const compileMs = q.language === 'cpp' ? q.compile_timeout * 1000 : 0;
  const job = {
    language: q.language,
    code: q.code,
    stdin: q.stdin ?? null,
    files: filesToRestore(q.files),
    fetch: filesToFetch(q.fetch_files),
    compileTimeout: q.compile_timeout,
    runTimeout: q.run_timeout,
    capture: SANDBOX_FUSION_OUTPUT_BYTES,
    fetchFileBytes: SANDBOX_FUSION_FILE_LIMITS.fetchFileBytes,
    fetchTotalBytes: SANDBOX_FUSION_FILE_LIMITS.fetchTotalBytes,
  };
  return {
    code: DRIVER,
    stdin: JSON.stringify(job),
    timeoutMs: Math.round(compileMs + q.run_timeout * 1000) + DRIVER_SLACK_MS,
    ...(q.memory_limit_MB > 0 && { memoryMb: q.memory_limit_MB }),
    maxOutputBytes: DRIVER_OUTPUT_BYTES,
    truncate: 'head',
  };
}

/**
 * What the driver may write on each stream, base64 included: four captures of 1 MiB (compile and run,
 * stdout and stderr) on stdout, the fetched files on stderr, plus their names and the JSON around them.
 */
const DRIVER_OUTPUT_BYTES =
  Math.ceil((Math.max(4 * SANDBOX_FUSION_OUTPUT_BYTES, SANDBOX_FUSION_FILE_LIMITS.fetchTotalBytes) * 4) / 3) +
  SANDBOX_FUSION_FILE_LIMITS.fetchFiles * SANDBOX_FUSION_FILE_LIMITS.pathChars * 6 +
  64 * 1024;

interface DriverCommand extends CommandRunResult {
  stdout: string;
  stderr: string;
}

/** The response for a driver call's result, statuses as sandbox_api.py parse_run_status derives them. */
export function drivenResponse(r: RunResult): SandboxFusionResponse {
  const base = { executor_pod_name: null, compile_result: null, run_result: null, files: {} };
  if (r.status === 'sandbox_error') return { ...base, status: 'SandboxError', message: r.stderr };
  const results = parseJson<{ compile: DriverCommand | null; run: DriverCommand | null }>(r.stdout);
  const side = parseJson<{ files: Record<string, string>; error: string | null }>(r.stderr);
  if (results === null || side === null) {
    if (r.status === 'memory_exceeded') {
      // the per-call memory cap SIGKILLed every process of the call, the driver too: the program's answer
      // is SandboxFusion's for a program killed over its memory limit
      const killed = { status: 'Finished', execution_time: r.wallMs / 1000, return_code: 137 } as const;
      return {
        ...base,
        status: 'Failed',
        message: '',
        run_result: { ...killed, stdout: '', stderr: lastLine(r.stderr) },
      };
    }
    const why = r.status === 'timeout' ? 'went past its time limit' : `ended ${r.status} without a result`;
    return { ...base, status: 'SandboxError', message: `executor: the run ${why}: ${lastLine(r.stderr)}` };
  }
  const response: SandboxFusionResponse = {
    ...base,
    status: 'Success',
    message: '',
    compile_result: results.compile && decoded(results.compile),
    run_result: results.run && decoded(results.run),
    files: side.files,
  };
  if (side.error !== null) return { ...response, status: 'SandboxError', message: side.error };
  return { ...response, ...parseRunStatus(response.compile_result, response.run_result) };
}

/** sandbox_api.py parse_run_status. */
function parseRunStatus(
  ...steps: (CommandRunResult | null)[]
): Pick<SandboxFusionResponse, 'status' | 'message'> {
  const ran = steps.filter((s): s is CommandRunResult => s !== null);
  const error = ran.find((s) => s.status === 'Error');
  if (error) return { status: 'SandboxError', message: error.stderr ?? '' };
  if (ran.some((s) => s.status === 'TimeLimitExceeded')) return { status: 'Failed', message: '' };
  if (ran.some((s) => s.return_code !== null && s.return_code !== 0))
    return { status: 'Failed', message: '' };
  return { status: 'Success', message: '' };
}

function decoded(c: DriverCommand): CommandRunResult {
  const text = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');
  return { ...c, stdout: text(c.stdout), stderr: text(c.stderr) };
}

function parseJson<T>(text: string): T | null {
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}

function lastLine(text: string): string {
  return text.trimEnd().split('\n').at(-1) ?? '';
}
