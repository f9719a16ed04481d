/** Error codes of @agentrl/kernels; callers branch on `error.code`, never on the message. */
export const KernelErrorCode = {
  /** An argument has the wrong type, dtype, length, or a value out of range (NaN, bad target id, ...). */
  InvalidArgument: 'KERNELS_INVALID_ARGUMENT',
  /** A config value is out of range (temperature <= 0, dual clip <= 1, missing horizon, ...). */
  InvalidConfig: 'KERNELS_INVALID_CONFIG',
  /** The requested backend was not compiled in or cannot run on this machine. */
  BackendUnavailable: 'KERNELS_BACKEND_UNAVAILABLE',
  /** The native code threw; the message carries its reason. */
  NativeFailure: 'KERNELS_NATIVE_FAILURE',
} as const;
export type KernelErrorCode = (typeof KernelErrorCode)[keyof typeof KernelErrorCode];

/** The one error class of the package; `argument` names the offending input when there is one. */
export class KernelError extends Error {
  override readonly name = 'KernelError';
  readonly code: KernelErrorCode;
  readonly argument: string | undefined;

  constructor(code: KernelErrorCode, message: string, options: { argument?: string; cause?: unknown } = {}) {
    super(options.argument ? `kernels: ${options.argument} ${message}` : `kernels: ${message}`, {
      cause: options.cause,
    });
    this.code = code;
    this.argument = options.argument;
  }
}
