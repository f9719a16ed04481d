import { defineErrorCodes, type ErrorCodeOf, errorClass } from '@agentrl/protocol';

/** What went wrong (`DIST_*`), for callers that branch on it. The native addon throws the same strings. */
export const DistErrorCode = defineErrorCodes('DIST', {
  INVALID_ARGUMENT: 'a bad argument (wrong dtype, length, root out of range)',
  UNAVAILABLE: 'MPI / NCCL cannot be loaded or used here; the message says why and what to install',
  NATIVE_FAILURE: 'the communication library reported an error',
  MISMATCH: 'ranks disagree on something that must be the same everywhere',
});
export type DistErrorCode = ErrorCodeOf<typeof DistErrorCode>;

/** The one error class of @agentrl/parallel. */
export class DistError extends errorClass('DistError', DistErrorCode, 'dist') {}

/** Re-throws a native error (which carries a DIST_* `code`) as a DistError. */
export function fromNative(err: unknown): never {
  const code = (err as { code?: string }).code;
  const known = Object.values(DistErrorCode) as string[];
  if (typeof code === 'string' && known.includes(code)) {
    throw new DistError(code as DistErrorCode, (err as Error).message, { cause: err });
  }
  throw err;
}
