/** What went wrong, for callers that branch on it. */
export const DistErrorCode = {
  /** A bad argument (wrong dtype, length, root out of range). */
  INVALID_ARGUMENT: 'DIST_INVALID_ARGUMENT',
  /** MPI / NCCL cannot be loaded or used here; the message says why and what to install. */
  UNAVAILABLE: 'DIST_UNAVAILABLE',
  /** The library reported an error. */
  NATIVE_FAILURE: 'DIST_NATIVE_FAILURE',
  /** Ranks disagree on something that must be the same everywhere. */
  MISMATCH: 'DIST_MISMATCH',
} as const;
export type DistErrorCode = (typeof DistErrorCode)[keyof typeof DistErrorCode];

/** The one error class of @agentrl/parallel. */
export class DistError extends Error {
  override readonly name = 'DistError';
  readonly code: DistErrorCode;

  constructor(code: DistErrorCode, message: string, options?: { cause?: unknown }) {
    super(`dist: ${message}`, options);
    this.code = code;
  }
}

/** Re-throws a native error (which carries a DIST_* `code`) as a DistError. */
export function fromNative(err: unknown): never {
  const code = (err as { code?: string }).code;
  const known = Object.values(DistErrorCode) as string[];
  if (typeof code === 'string' && known.includes(code)) {
    throw new DistError(code as DistErrorCode, (err as Error).message, { cause: err });
  }
  throw err;
}
