/** Codes of `MathVerifyError`; verification itself never throws, only misuse does. */
export const MathVerifyErrorCode = {
  INVALID_OPTIONS: 'INVALID_OPTIONS',
  WORKER_FAILED: 'WORKER_FAILED',
} as const;
export type MathVerifyErrorCode = (typeof MathVerifyErrorCode)[keyof typeof MathVerifyErrorCode];

export class MathVerifyError extends Error {
  override readonly name = 'MathVerifyError';
  constructor(
    readonly code: MathVerifyErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
