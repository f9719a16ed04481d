/** Every way @agentrl/rollout can fail; callers branch on `code`, never on the message. */
export const RolloutErrorCode = {
  /** The engine could not be reached (connection refused, DNS, reset before a reply). */
  ENGINE_UNREACHABLE: 'ENGINE_UNREACHABLE',
  /** The engine answered with an HTTP error status. */
  ENGINE_HTTP_ERROR: 'ENGINE_HTTP_ERROR',
  /** The engine did not answer within the request timeout. */
  ENGINE_TIMEOUT: 'ENGINE_TIMEOUT',
  /** The engine's reply was cut off or was not the documented shape. */
  ENGINE_BAD_RESPONSE: 'ENGINE_BAD_RESPONSE',
  /** The engine failed in-process (native error). */
  ENGINE_FAILED: 'ENGINE_FAILED',
  /** The request was cancelled by the caller. */
  ABORTED: 'ABORTED',
  /** A trajectory asked for more KV cache than any engine has. */
  NO_CAPACITY: 'NO_CAPACITY',
  /** A configuration value or argument is invalid. */
  INVALID_CONFIG: 'INVALID_CONFIG',
  /** The chat template could not be rendered or does not show where turns begin and end. */
  TEMPLATE_ERROR: 'TEMPLATE_ERROR',
  /** An operation the adapter does not support (e.g. weight sync on a read-only server). */
  UNSUPPORTED: 'UNSUPPORTED',
} as const;
export type RolloutErrorCode = (typeof RolloutErrorCode)[keyof typeof RolloutErrorCode];

/** The one error class of @agentrl/rollout. */
export class RolloutError extends Error {
  override readonly name = 'RolloutError';
  readonly code: RolloutErrorCode;

  constructor(code: RolloutErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** True for engine failures that end a trajectory with `engine_error` or `timeout` instead of throwing. */
export function isEngineFailure(err: unknown): err is RolloutError {
  return (
    err instanceof RolloutError &&
    (err.code === RolloutErrorCode.ENGINE_UNREACHABLE ||
      err.code === RolloutErrorCode.ENGINE_HTTP_ERROR ||
      err.code === RolloutErrorCode.ENGINE_TIMEOUT ||
      err.code === RolloutErrorCode.ENGINE_BAD_RESPONSE ||
      err.code === RolloutErrorCode.ENGINE_FAILED ||
      err.code === RolloutErrorCode.ABORTED)
  );
}
