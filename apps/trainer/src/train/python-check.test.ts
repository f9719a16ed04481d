import { describe, expect, it } from 'vitest';
import { TrainerError } from '../errors.js';
import { checkPython } from './python-check.js';

describe('checkPython', () => {
  it('accepts the machine python3', () => {
    expect(checkPython('python3')).toMatch(/^3\.\d+\.\d+$/);
  });

  it('names the fix when Python is missing', () => {
    let err: unknown;
    try {
      checkPython('/nonexistent/python3');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TrainerError);
    expect((err as TrainerError).code).toBe('TRAINER_PYTHON_MISSING');
    expect((err as TrainerError).message).toMatch(/was not found.*install it.*--executor\.python/);
  });
});
