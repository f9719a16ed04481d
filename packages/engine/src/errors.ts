import { defineErrorCodes, type ErrorCodeOf, errorClass } from '@agentrl/protocol';

/** What went wrong (`ENGINE_*`), for callers that branch on it. */
export const EngineErrorCode = defineErrorCodes('ENGINE', {
  INVALID_CONFIG: 'a model config or option is invalid (sizes, heads that do not divide, dtype)',
  UNSUPPORTED_ARCHITECTURE: 'config.json names an architecture the engine does not implement',
  INVALID_BATCH: 'a batch is malformed: lengths that disagree, token ids out of range',
  CHECKPOINT_NOT_FOUND: 'the checkpoint directory or one of its files does not exist',
  CHECKPOINT_TRUNCATED: 'a safetensors file is shorter than its header says',
  CHECKPOINT_INVALID: 'a checkpoint file is not valid safetensors / JSON / optimizer state',
  CHECKPOINT_MISMATCH: 'a checkpoint does not fit the model (missing tensors, other shapes)',
  NO_FORWARD: 'a backward pass was asked for without the forward pass it needs',
  NOT_TRAINING: 'a training operation on a model created for inference only',
  INVALID_REQUEST: 'a generate request is malformed (duplicate cache id, no tokens, bad sampling)',
  TOKENIZER: 'the tokenizer or chat template cannot be loaded or applied',
  INVALID_ARGUMENT: 'the native addon refused an argument (it throws a plain Error with this code)',
  NATIVE_FAILURE: 'the native addon failed, is missing a component, or cannot run on this device',
});
export type EngineErrorCode = ErrorCodeOf<typeof EngineErrorCode>;

/** The one error class of @agentrl/engine: `code` says what kind, the message says what to do. */
export class EngineError extends errorClass('EngineError', EngineErrorCode, 'engine') {}
