import { describe, expect, it } from 'vitest';
import { exitStatusOf, TrainerError, TrainerErrorCode } from './errors.js';

describe('TrainerError', () => {
  it('carries TRAINER_ codes and exits 2 only when the command was called wrong', () => {
    const usage = new TrainerError('USAGE', 'unknown flag --x; see --help');
    expect(usage.code).toBe('TRAINER_USAGE');
    expect(exitStatusOf(usage)).toBe(2);
    expect(exitStatusOf(new TrainerError(TrainerErrorCode.CONFIG_FILE, 'x'))).toBe(2);
    expect(exitStatusOf(new TrainerError('CHECKPOINT', 'x'))).toBe(1);
  });
});
