import { defineErrorCodes, type ErrorCodeOf, errorClass } from '@agentrl/protocol';

/**
 * Why an executor operation failed (`EXECUTOR_*`; not how a program ended: that is a ToolOutcome
 * status). A `sandbox_error` result carries one of these in `error.code`, over HTTP and Redis too.
 */
export const ExecutorErrorCode = defineErrorCodes('EXECUTOR', {
  INVALID_CONFIG: 'an executor option or serve flag is invalid',
  INVALID_REQUEST: 'a run() call is malformed (no code, bad limits, bad truncate mode)',
  SANDBOX_UNAVAILABLE: 'the Python sandbox cannot start here (no python3, no namespaces, no fork server)',
  WORKER_CRASHED: 'the sandbox worker died while running the call',
  KILLED: 'the call was SIGKILLed from outside its sandbox (the OOM killer, an operator), not by a limit',
  CLOSED: 'run() after close()',
  TRANSPORT: 'the HTTP server or Redis could not be reached or answered garbage',
  QUEUE_FULL: 'the server is overloaded and refused the call',
  DEADLINE: 'the call waited past its deadline before a worker took it',
  CANCELLED: 'the caller aborted the call',
});
export type ExecutorErrorCode = ErrorCodeOf<typeof ExecutorErrorCode>;

/** The one error class of @agentrl/executor; branch on `code`. */
export class ExecutorError extends errorClass('ExecutorError', ExecutorErrorCode, 'executor') {}
