import type { Limits } from './config.js';
import { ExecutorError, ExecutorErrorCode } from './errors.js';
import type { RawRequest, RawResult } from './fork-server.js';
import type { RunRequest, RunResult } from './types.js';

/** Absolute ranges of the per-call limits, whatever executor runs the call (its own ceilings come on top). */
export const CALL_RANGES = {
  timeoutMs: [10, 600_000],
  memoryMb: [16, 65_536],
  maxOutputBytes: [64, 64 * 1024 * 1024],
  deadlineMs: [1, 24 * 3600 * 1000],
} as const;

/** Most UTF-16 code units of code and stdin together (the fork server drops request lines past 512 MiB). */
export const MAX_SOURCE_CHARS = 64 * 1024 * 1024;

/** A lone surrogate: valid in a JS string and in JSON, not encodable as UTF-8. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * What any executor accepts as one call: its shape, text that UTF-8 can carry, sizes, and the absolute ranges
 * of its limits. Every client checks it before a call joins a batch, and every server checks each item of a
 * batch on its own, so one malformed call is refused alone. Throws INVALID_REQUEST saying what to fix.
 */
export function checkRequest(req: unknown): asserts req is RunRequest {
  const bad = (msg: string) => new ExecutorError('INVALID_REQUEST', msg);
  if (typeof req !== 'object' || req === null) throw bad('a call must be an object { code: string, ... }');
  const r = req as Record<string, unknown>;
  if (typeof r.code !== 'string') throw bad('run() needs { code: string }; got no code');
  if (r.stdin !== undefined && typeof r.stdin !== 'string') throw bad('stdin must be a string when given');
  const stdin = (r.stdin as string | undefined) ?? '';
  if (r.code.length + stdin.length > MAX_SOURCE_CHARS)
    throw bad(`code and stdin together must be at most ${MAX_SOURCE_CHARS} characters`);
  for (const [field, text] of [
    ['code', r.code],
    ['stdin', stdin],
  ] as const) {
    const m = LONE_SURROGATE.exec(text);
    if (m) throw bad(`${field} holds a lone UTF-16 surrogate at index ${m.index}; send well-formed text`);
  }
  for (const [field, [min, max]] of Object.entries(CALL_RANGES)) {
    const v = r[field];
    if (v !== undefined && !(typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max))
      throw bad(`${field} must be an integer between ${min} and ${max}; got ${JSON.stringify(v)}`);
  }
  if (r.lastExpression !== undefined && typeof r.lastExpression !== 'boolean')
    throw bad('lastExpression must be a boolean when given');
  truncateMode(r.truncate);
}

/**
 * Validates one call and fills in the executor's limits. A call may lower its limits, never raise them past
 * this executor's ceilings (memoryMb: the pool's own; timeoutMs: maxTimeoutMs; maxOutputBytes:
 * maxCallOutputBytes). Throws INVALID_REQUEST on misuse.
 */
export function resolveRequest(req: RunRequest, limits: Limits): RawRequest {
  checkRequest(req);
  const timeoutMs = ceiling(
    req.timeoutMs ?? limits.timeoutMs,
    Math.max(limits.timeoutMs, limits.maxTimeoutMs),
    'timeoutMs',
    'maxTimeoutMs',
  );
  return {
    code: req.code,
    stdin: req.stdin ?? '',
    timeoutMs,
    cpuMs: limits.cpuMs ?? timeoutMs,
    memoryMb: ceiling(req.memoryMb ?? limits.memoryMb, limits.memoryMb, 'memoryMb', 'memoryMb / --memory-mb'),
    maxOutputBytes: ceiling(
      req.maxOutputBytes ?? limits.maxOutputBytes,
      Math.max(limits.maxOutputBytes, limits.maxCallOutputBytes),
      'maxOutputBytes',
      'maxCallOutputBytes',
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

function ceiling(v: number, max: number, what: string, knob: string): number {
  if (v > max) {
    throw new ExecutorError(
      'INVALID_REQUEST',
      `${what} ${v} is above this executor's ceiling of ${max}; ask for less, or raise ${knob} where it runs`,
    );
  }
  return v;
}

/**
 * Runs each call of a batch on its own: a call refused as malformed (INVALID_REQUEST) is answered with
 * sandbox_error and that code, and the others run. Other errors (CLOSED) still reject.
 */
export function answerEach(
  requests: readonly RunRequest[],
  run: (r: RunRequest) => Promise<RunResult>,
): Promise<RunResult[]> {
  return Promise.all(
    requests.map((r) =>
      run(r).catch((e: unknown) => {
        if (e instanceof ExecutorError && e.code === ExecutorErrorCode.INVALID_REQUEST)
          return errorResult(e, 0);
        throw e;
      }),
    ),
  );
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
