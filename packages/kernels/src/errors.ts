import {
  AgentrlError,
  defineErrorCodes,
  type ErrorCodeInput,
  type ErrorCodeOf,
  errorCode,
} from '@agentrl/protocol';

/**
 * Error codes of @agentrl/kernels (`KERNELS_*`); callers branch on `error.code`, never on the
 * message. The native addon throws the same strings (native/src/kernels), mapped back by binding.ts.
 */
export const KernelErrorCode = defineErrorCodes('KERNELS', {
  INVALID_ARGUMENT:
    'an argument has the wrong type, dtype, length, or a value out of range (NaN, bad target id, ...)',
  INVALID_CONFIG: 'a config value is out of range (temperature <= 0, dual clip <= 1, missing horizon, ...)',
  BACKEND_UNAVAILABLE: 'the requested backend was not compiled in or cannot run on this machine',
  NATIVE_FAILURE: 'the native code threw; the message carries its reason',
});
export type KernelErrorCode = ErrorCodeOf<typeof KernelErrorCode>;

/** The one error class of the package; `argument` names the offending input when there is one. */
export class KernelError extends AgentrlError<KernelErrorCode> {
  override readonly name = 'KernelError';
  readonly argument: string | undefined;

  constructor(
    code: ErrorCodeInput<typeof KernelErrorCode>,
    message: string,
    options: { argument?: string; cause?: unknown } = {},
  ) {
    const what = options.argument ? `${options.argument} ` : '';
    super(errorCode(KernelErrorCode, code), `kernels: ${what}${message}`, { cause: options.cause });
    this.argument = options.argument;
  }
}
