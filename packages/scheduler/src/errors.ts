import { defineErrorCodes, type ErrorCodeOf, errorClass } from '@agentrl/protocol';

/** Every way @agentrl/scheduler can fail; callers branch on `code`, never on the message. */
export const SchedulerErrorCode = defineErrorCodes('SCHEDULER', {
  NO_CAPACITY: 'a trajectory asked for more KV cache than any engine has',
  ABORTED: 'the wait for an engine was cancelled by the caller',
  INVALID_CONFIG:
    'a scheduler option or argument is invalid (no engines, overcommit below 1, unknown engine)',
});
export type SchedulerErrorCode = ErrorCodeOf<typeof SchedulerErrorCode>;

/** The one error class of @agentrl/scheduler. */
export class SchedulerError extends errorClass('SchedulerError', SchedulerErrorCode) {}
