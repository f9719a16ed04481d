import { defineErrorCodes, type ErrorCodeOf, errorClass } from '@agentrl/protocol';

/**
 * Every way the agent loop can fail, and the failures every EngineAdapter reports: adapters in any
 * package (@agentrl/engine-adapters, @agentrl/onnx) throw a RolloutError with an ENGINE_* code,
 * ABORTED or UNSUPPORTED, so that the loop tells an engine failure from a bug without knowing the
 * adapter (@agentrl/engine-adapters raises only these, INVALID_CONFIG included, and has no error
 * class of its own). Callers branch on `code`, never on the message.
 */
export const RolloutErrorCode = defineErrorCodes('ROLLOUT', {
  ENGINE_UNREACHABLE: 'the engine could not be reached (connection refused, DNS, reset before a reply)',
  ENGINE_HTTP_ERROR: 'the engine answered with an HTTP error status',
  ENGINE_TIMEOUT: 'the engine did not answer within the request timeout',
  ENGINE_BAD_RESPONSE: "the engine's reply was cut off or was not the documented shape",
  ENGINE_FAILED: 'the engine failed in-process (native error) or aborted the request itself',
  ABORTED: 'the request was cancelled by the caller',
  INVALID_CONFIG:
    'a configuration value or argument is invalid (two tools with one name; a remote engine that does not serve the model or tokenizes differently)',
  TEMPLATE_ERROR: 'the chat template could not be rendered or does not show where turns begin and end',
  UNSUPPORTED: 'an operation the adapter does not support (e.g. that kind of weight update)',
});
export type RolloutErrorCode = ErrorCodeOf<typeof RolloutErrorCode>;

/** The one error class of @agentrl/rollout, and of every engine adapter's request failures. */
export class RolloutError extends errorClass('RolloutError', RolloutErrorCode) {}

const ENGINE_FAILURES: ReadonlySet<string> = new Set([
  RolloutErrorCode.ENGINE_UNREACHABLE,
  RolloutErrorCode.ENGINE_HTTP_ERROR,
  RolloutErrorCode.ENGINE_TIMEOUT,
  RolloutErrorCode.ENGINE_BAD_RESPONSE,
  RolloutErrorCode.ENGINE_FAILED,
  RolloutErrorCode.ABORTED,
]);

/** True for engine failures that end a trajectory with `engine_error` or `timeout` instead of throwing. */
export function isEngineFailure(err: unknown): err is RolloutError {
  return err instanceof RolloutError && ENGINE_FAILURES.has(err.code);
}
