import { defineErrorCodes, type ErrorCodeOf, errorClass } from '@agentrl/protocol';

/**
 * How exporting a decoder or configuring the ONNX adapter can fail. A request that fails in ONNX
 * Runtime, is cancelled, or asks for an unsupported weight update is a RolloutError of
 * @agentrl/rollout instead, the EngineAdapter contract the agent loop reads.
 */
export const OnnxErrorCode = defineErrorCodes('ONNX', {
  INVALID_CONFIG:
    'the decoder cannot be exported (heads not a multiple of kv heads, odd head_dim, a missing tensor) or the adapter lacks an option a request needs',
});
export type OnnxErrorCode = ErrorCodeOf<typeof OnnxErrorCode>;

/** The one error class of @agentrl/onnx. */
export class OnnxError extends errorClass('OnnxError', OnnxErrorCode) {}
