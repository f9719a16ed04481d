import { defineErrorCodes, type ErrorCodeOf, errorClass } from '@agentrl/protocol';

/** Error codes of @agentrl/grpo (`GRPO_*`); callers branch on `error.code`, never on the message. */
export const GrpoErrorCode = defineErrorCodes('GRPO', {
  INVALID_CONFIG: 'a config value is out of range or inconsistent (n larger than N, minimums above n, ...)',
  INVALID_INPUT:
    'a group or trajectory is malformed: empty group, NaN or missing reward, lengths that disagree',
  OVER_BUDGET: 'a trajectory or a whole group does not fit the micro-batch token budget',
});
export type GrpoErrorCode = ErrorCodeOf<typeof GrpoErrorCode>;

/**
 * The one error class of the package. `field` names the offending input the way a reader would
 * index it, e.g. `groups[3].trajectories[7].reward`, so a bad batch points at its own row.
 */
export class GrpoError extends errorClass('GrpoError', GrpoErrorCode, 'grpo') {}
