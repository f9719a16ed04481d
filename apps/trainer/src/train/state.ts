import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TrainerError } from '../errors.js';
import type { DataCursor } from './cursor.js';

/** Everything besides weights and optimizer moments that a resumed run needs (trainer-state.json). */
export interface TrainerState {
  version: 1;
  /** SFT finished (its checkpoint is the RL starting point). */
  sftDone: boolean;
  /** SFT optimizer steps done (a checkpoint written during SFT resumes after this step). */
  sftStep: number;
  /** Completed RL steps, over all stages. */
  rlStep: number;
  /** Stage of the next step, and steps already done in it. */
  stageIndex: number;
  stepInStage: number;
  /** Data cursor of the current stage. */
  cursor: DataCursor | null;
  /** Problems whose latest group was solved by every sample (left out of a hardOnly stage). */
  solvedAll: string[];
  /** Wall seconds spent before this checkpoint (summed over interrupted segments). */
  wallSeconds: number;
  /** Seed the run streams derive from; every stream is re-derived from (seed, purpose, step). */
  seed: number;
}

export function initialState(seed: number): TrainerState {
  return {
    version: 1,
    sftDone: false,
    sftStep: 0,
    rlStep: 0,
    stageIndex: 0,
    stepInStage: 0,
    cursor: null,
    solvedAll: [],
    wallSeconds: 0,
    seed,
  };
}

export function writeState(dir: string, state: TrainerState): void {
  writeFileSync(join(dir, 'trainer-state.json'), `${JSON.stringify(state, null, 1)}\n`);
}

export function readState(dir: string): TrainerState {
  try {
    const s = JSON.parse(readFileSync(join(dir, 'trainer-state.json'), 'utf8')) as TrainerState;
    if (s.version !== 1) throw new Error(`unknown version ${s.version}`);
    // Checkpoints written before SFT was checkpointed were all written after SFT.
    return { ...s, sftStep: s.sftStep ?? 0 };
  } catch (cause) {
    throw new TrainerError(
      'CHECKPOINT',
      `checkpoint: ${dir}/trainer-state.json is unreadable (${(cause as Error).message}); resume from an earlier checkpoint or start a new run`,
      { cause },
    );
  }
}
