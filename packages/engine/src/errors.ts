/** What went wrong, for callers that branch on it. */
export const EngineErrorCode = {
  INVALID_CONFIG: 'INVALID_CONFIG',
  UNSUPPORTED_ARCHITECTURE: 'UNSUPPORTED_ARCHITECTURE',
  INVALID_BATCH: 'INVALID_BATCH',
  CHECKPOINT_NOT_FOUND: 'CHECKPOINT_NOT_FOUND',
  CHECKPOINT_TRUNCATED: 'CHECKPOINT_TRUNCATED',
  CHECKPOINT_INVALID: 'CHECKPOINT_INVALID',
  CHECKPOINT_MISMATCH: 'CHECKPOINT_MISMATCH',
  NO_FORWARD: 'NO_FORWARD',
  NOT_TRAINING: 'NOT_TRAINING',
  INVALID_REQUEST: 'INVALID_REQUEST',
  TOKENIZER: 'TOKENIZER',
  NATIVE: 'NATIVE',
} as const;
export type EngineErrorCode = (typeof EngineErrorCode)[keyof typeof EngineErrorCode];

/** The one error class of @agentrl/engine: `code` says what kind, the message says what to do. */
export class EngineError extends Error {
  override readonly name = 'EngineError';
  readonly code: EngineErrorCode;

  constructor(code: EngineErrorCode, message: string, options?: { cause?: unknown }) {
    super(`engine: ${message}`, options);
    this.code = code;
  }
}
