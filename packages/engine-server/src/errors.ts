import {
  AgentrlError,
  defineErrorCodes,
  type ErrorCodeInput,
  type ErrorCodeOf,
  errorCode,
} from '@agentrl/protocol';

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
});
export type EngineServerErrorCode = ErrorCodeOf<typeof EngineServerErrorCode>;

const STATUS: Record<keyof typeof EngineServerErrorCode, number> = {
  INVALID_REQUEST: 400,
  UNSUPPORTED_FIELD: 400,
  MODEL_NOT_FOUND: 404,
  CHECKPOINT: 500,
  WEIGHTS_REFUSED: 400,
};

/** The one error class of @agentrl/engine-server; `status` is the HTTP status it answers with. */
export class EngineServerError extends AgentrlError<EngineServerErrorCode> {
  override readonly name = 'EngineServerError';
  readonly status: number;

  constructor(
    code: ErrorCodeInput<typeof EngineServerErrorCode>,
    message: string,
    options?: { cause?: unknown },
  ) {
    const full = errorCode(EngineServerErrorCode, code);
    super(full, message, options);
    this.status = STATUS[full.slice('ESERVER_'.length) as keyof typeof EngineServerErrorCode];
  }
}
