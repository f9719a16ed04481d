import { defineErrorCodes, type ErrorCodeOf, errorClass } from '@agentrl/protocol';

/**
 * Every way @agentrl/engine-server fails (`ESERVER_*`); callers branch on `code`, never on the
 * message. The HTTP error body stays vLLM's (`code` is the status number), so these never cross the wire.
 */
export const EngineServerErrorCode = defineErrorCodes('ESERVER', {
  INVALID_REQUEST: 'the request is not the shape vLLM / SGLang document',
  UNSUPPORTED_FIELD: 'a standard field with a non-neutral value the engine does not implement',
  MODEL_NOT_FOUND: 'the request names a model this server does not serve',
  CHECKPOINT: 'the checkpoint (or its tokenizer) could not be opened',
  WEIGHTS_REFUSED: 'new weights could not be loaded (bad path, other architecture)',
  RELEASED: 'a generation request while the memory is released (/release_memory_occupation, /sleep)',
});
export type EngineServerErrorCode = ErrorCodeOf<typeof EngineServerErrorCode>;

const STATUS: Record<EngineServerErrorCode, number> = {
  [EngineServerErrorCode.INVALID_REQUEST]: 400,
  [EngineServerErrorCode.UNSUPPORTED_FIELD]: 400,
  [EngineServerErrorCode.MODEL_NOT_FOUND]: 404,
  [EngineServerErrorCode.CHECKPOINT]: 500,
  [EngineServerErrorCode.WEIGHTS_REFUSED]: 400,
  [EngineServerErrorCode.RELEASED]: 503,
};

/** The one error class of @agentrl/engine-server. */
export class EngineServerError extends errorClass('EngineServerError', EngineServerErrorCode) {
  /** The HTTP status it answers with. */
  get status(): number {
    return STATUS[this.code];
  }
}

/**
 * Current vLLM's error body (`ErrorResponse(error=ErrorInfo(message, type, param, code))` in
 * `vllm/entrypoints/openai/protocol.py`; before 0.10.2 these fields were at the top level).
 */
export function vllmError(status: number, message: string) {
  const type =
    status === 404
      ? 'NotFoundError'
      : status === 503
        ? 'ServiceUnavailableError'
        : status < 500
          ? 'BadRequestError'
          : 'InternalServerError';
  return { error: { message, type, param: null, code: status } };
}
