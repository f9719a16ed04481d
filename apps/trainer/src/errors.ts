/** Error codes of the trainer; callers branch on `code`, people read `message`. */
export const TRAINER_ERROR_CODES = {
  CONFIG_INVALID: 'CONFIG_INVALID',
  CONFIG_FILE: 'CONFIG_FILE',
  USAGE: 'USAGE',
  PYTHON_MISSING: 'PYTHON_MISSING',
  EXECUTOR_UNREACHABLE: 'EXECUTOR_UNREACHABLE',
  ENGINE_UNREACHABLE: 'ENGINE_UNREACHABLE',
  DATASET: 'DATASET',
  RUN_DIR: 'RUN_DIR',
  CHECKPOINT: 'CHECKPOINT',
  DEPENDENCY: 'DEPENDENCY',
} as const;
export type TrainerErrorCode = keyof typeof TRAINER_ERROR_CODES;

/** The one error class of the trainer. Messages say what was wrong and what to do. */
export class TrainerError extends Error {
  override readonly name = 'TrainerError';
  readonly code: TrainerErrorCode;

  constructor(code: TrainerErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}
