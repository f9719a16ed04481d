/** Error codes of @agentrl/grpo; callers branch on `error.code`, never on the message. */
export const GrpoErrorCode = {
  /** A config value is out of range or inconsistent (n larger than N, minimums above n, ...). */
  InvalidConfig: 'GRPO_INVALID_CONFIG',
  /** A group or trajectory is malformed: empty group, NaN or missing reward, lengths that disagree. */
  InvalidInput: 'GRPO_INVALID_INPUT',
  /** A trajectory or a whole group does not fit the micro-batch token budget. */
  OverBudget: 'GRPO_OVER_BUDGET',
} as const;
export type GrpoErrorCode = (typeof GrpoErrorCode)[keyof typeof GrpoErrorCode];

/**
 * The one error class of the package. `field` names the offending input the way a reader would
 * index it, e.g. `groups[3].trajectories[7].reward`, so a bad batch points at its own row.
 */
export class GrpoError extends Error {
  override readonly name = 'GrpoError';
  readonly code: GrpoErrorCode;
  readonly field: string | undefined;

  constructor(code: GrpoErrorCode, message: string, options: { field?: string; cause?: unknown } = {}) {
    super(options.field ? `grpo: ${options.field} ${message}` : `grpo: ${message}`, { cause: options.cause });
    this.code = code;
    this.field = options.field;
  }
}
