import type { Limits } from './config.js';
import { ExecutorError, ExecutorErrorCode } from './errors.js';
import type { RawRequest, RawResult } from './fork-server.js';
import type { RunRequest, RunResult } from './types.js';

/** Validates one call and fills in the executor's limits. Throws INVALID_REQUEST on misuse. */
export function resolveRequest(req: RunRequest, limits: Limits): RawRequest {
  if (typeof req?.code !== 'string') {
    throw new ExecutorError('INVALID_REQUEST', 'run() needs { code: string }; got no code');
  }
  if (req.stdin !== undefined && typeof req.stdin !== 'string') {
    throw new ExecutorError('INVALID_REQUEST', 'stdin must be a string when given');
  }
  const timeoutMs = clampInt(req.timeoutMs ?? limits.timeoutMs, 10, 600_000, 'timeoutMs');
  return {
    code: req.code,
    stdin: req.stdin ?? '',
    timeoutMs,
    cpuMs: limits.cpuMs ?? timeoutMs,
    memoryMb: clampInt(req.memoryMb ?? limits.memoryMb, 16, 65_536, 'memoryMb'),
    maxOutputBytes: clampInt(
      req.maxOutputBytes ?? limits.maxOutputBytes,
      64,
      64 * 1024 * 1024,
      'maxOutputBytes',
    ),
    truncate: truncateMode(req.truncate),
    maxProcs: limits.maxProcs,
    maxFileMb: limits.maxFileMb,
    tmpMb: limits.tmpMb,
    lastExpression: req.lastExpression ?? false,
  };
}

function truncateMode(v: unknown): 'middle' | 'head' {
  if (v === undefined || v === 'middle' || v === 'head') return v ?? 'middle';
  throw new ExecutorError('INVALID_REQUEST', `truncate must be "middle" or "head"; got ${JSON.stringify(v)}`);
}

function clampInt(v: number, min: number, max: number, what: string): number {
  if (!Number.isFinite(v) || v < min || v > max) {
    throw new ExecutorError('INVALID_REQUEST', `${what} must be between ${min} and ${max}; got ${v}`);
  }
  return Math.round(v);
}

export function toResult(raw: RawResult, latencyMs: number): RunResult {
  const { id: _id, errorCode, ...rest } = raw;
  const result: RunResult = { ...rest, latencyMs };
  if (raw.status === 'sandbox_error') {
    // the fork server names its reason by key ("KILLED"); results carry the full code
    result.error = { code: ExecutorErrorCode[errorCode ?? 'WORKER_CRASHED'], message: raw.stderr };
  }
  return result;
}

/** A sandbox_error result for a call the infrastructure could not answer. */
export function errorResult(error: ExecutorError | Error, latencyMs: number): RunResult {
  const code = error instanceof ExecutorError ? error.code : ExecutorErrorCode.TRANSPORT;
  return {
    status: 'sandbox_error',
    stdout: '',
    stderr: error.message,
    exitCode: null,
    signal: null,
    wallMs: 0,
    cpuMs: null,
    stdoutBytes: 0,
    stderrBytes: 0,
    latencyMs,
    error: { code, message: error.message },
  };
}
