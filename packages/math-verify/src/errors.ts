import { defineErrorCodes, type ErrorCodeOf, errorClass } from '@agentrl/protocol';

/** Codes of `MathVerifyError` (`MATH_VERIFY_*`); verification itself never throws, only misuse does. */
export const MathVerifyErrorCode = defineErrorCodes('MATH_VERIFY', {
  INVALID_OPTIONS: 'the verify options do not parse (see VerifyOptionsSchema)',
  WORKER_FAILED: 'the isolated verify worker failed or timed out',
});
export type MathVerifyErrorCode = ErrorCodeOf<typeof MathVerifyErrorCode>;

/** The one error class of @agentrl/math-verify. */
export class MathVerifyError extends errorClass('MathVerifyError', MathVerifyErrorCode) {}
