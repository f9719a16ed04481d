/** Why an executor operation failed (not how a program ended: that is a ToolOutcome status). */
export const ExecutorErrorCode = {
  INVALID_CONFIG: 'INVALID_CONFIG',
  INVALID_REQUEST: 'INVALID_REQUEST',
  SANDBOX_UNAVAILABLE: 'SANDBOX_UNAVAILABLE',
  WORKER_CRASHED: 'WORKER_CRASHED',
  /** The call was SIGKILLed from outside its sandbox (the host's OOM killer, an operator), not by a limit. */
  KILLED: 'KILLED',
  CLOSED: 'CLOSED',
  TRANSPORT: 'TRANSPORT',
  QUEUE_FULL: 'QUEUE_FULL',
  DEADLINE: 'DEADLINE',
  CANCELLED: 'CANCELLED',
} as const;
export type ExecutorErrorCode = (typeof ExecutorErrorCode)[keyof typeof ExecutorErrorCode];

/** The one error class of @agentrl/executor; branch on `code`. */
export class ExecutorError extends Error {
  override readonly name = 'ExecutorError';
  readonly code: ExecutorErrorCode;

  constructor(code: ExecutorErrorCode, message: string, options?: { cause?: unknown }) {
    super(`executor: ${message}`, options);
    this.code = code;
  }
}
