/** Every way @agentrl/engine-server fails; callers branch on `code`, never on the message. */
export const EngineServerErrorCode = {
  /** The request is not the shape vLLM / SGLang document. */
  INVALID_REQUEST: 'INVALID_REQUEST',
  /** A standard field with a non-neutral value the engine does not implement. */
  UNSUPPORTED_FIELD: 'UNSUPPORTED_FIELD',
  /** The request names a model this server does not serve. */
  MODEL_NOT_FOUND: 'MODEL_NOT_FOUND',
  /** The checkpoint (or its tokenizer) could not be opened. */
  CHECKPOINT: 'CHECKPOINT',
  /** New weights could not be loaded (bad path, other architecture). */
  WEIGHTS_REFUSED: 'WEIGHTS_REFUSED',
} as const;
export type EngineServerErrorCode = (typeof EngineServerErrorCode)[keyof typeof EngineServerErrorCode];

const STATUS: Record<EngineServerErrorCode, number> = {
  INVALID_REQUEST: 400,
  UNSUPPORTED_FIELD: 400,
  MODEL_NOT_FOUND: 404,
  CHECKPOINT: 500,
  WEIGHTS_REFUSED: 400,
};

/** The one error class of @agentrl/engine-server; `status` is the HTTP status it answers with. */
export class EngineServerError extends Error {
  override readonly name = 'EngineServerError';
  readonly code: EngineServerErrorCode;
  readonly status: number;

  constructor(code: EngineServerErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.status = STATUS[code];
  }
}
