import { defineErrorCodes, type ErrorCodeOf, errorClass } from '@agentrl/protocol';

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

/** The one error class of the package; `field` names the offending argument when there is one. */
export class KernelError extends errorClass('KernelError', KernelErrorCode, 'kernels') {}
