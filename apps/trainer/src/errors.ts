import { defineErrorCodes, type ErrorCodeOf, errorClass } from '@agentrl/protocol';

/** Error codes of the trainer (`TRAINER_*`); callers branch on `code`, people read `message`. */
export const TrainerErrorCode = defineErrorCodes('TRAINER', {
  CONFIG_INVALID: 'a config value, preset or flag combination is invalid (exit status 2)',
  CONFIG_FILE: 'the --config file cannot be read or parsed (exit status 2)',
  USAGE: 'the command line is malformed: unknown flag, missing value (exit status 2)',
  PYTHON_MISSING: 'no python3 to run the tool calls in',
  EXECUTOR_UNREACHABLE: 'the --executor server or Redis did not answer',
  ENGINE_UNREACHABLE: 'the rollout engines failed (weight sync, or too many trajectories of a step)',
  DATASET: 'a dataset or SFT file is missing, unreadable or has no usable rows',
  RUN_DIR: 'the run directory exists, is not a run, or cannot be written',
  CHECKPOINT: 'a checkpoint (weights, tokenizer, trainer state) is missing, unreadable or of another run',
  DEPENDENCY: 'the chosen --device cannot run here (no GPU, driver or backend library)',
});
export type TrainerErrorCode = ErrorCodeOf<typeof TrainerErrorCode>;

/** The one error class of the trainer. Messages say what was wrong and what to do. */
export class TrainerError extends errorClass('TrainerError', TrainerErrorCode) {}

const CALLED_WRONG: readonly string[] = [
  TrainerErrorCode.USAGE,
  TrainerErrorCode.CONFIG_INVALID,
  TrainerErrorCode.CONFIG_FILE,
];

/** The CLI's exit status for a trainer error: 2 when the command was called wrong (usage, config), else 1. */
export function exitStatusOf(err: TrainerError): 1 | 2 {
  return CALLED_WRONG.includes(err.code) ? 2 : 1;
}
