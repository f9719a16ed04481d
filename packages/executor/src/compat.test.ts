import { describe, expect, it } from 'vitest';
import { fromCodeJudge, fromSandboxFusion, toCodeJudge, toSandboxFusion } from './compat.js';
import type { RunResult } from './types.js';

const base: RunResult = {
  status: 'ok',
  stdout: '3\n',
  stderr: '',
  exitCode: 0,
  signal: null,
  wallMs: 1500,
  cpuMs: 10,
  stdoutBytes: 2,
  stderrBytes: 0,
  latencyMs: 1600,
};

describe('code-judge mapping', () => {
  it('maps submissions and results both ways', () => {
    expect(fromCodeJudge({ type: 'python', solution: 'print(1)', input: 'x' })).toEqual({
      code: 'print(1)',
      stdin: 'x',
    });
    const sub = { sub_id: 's', type: 'python' as const, solution: '', expected_output: '3' };
    expect(toCodeJudge(sub, base)).toEqual({
      sub_id: 's',
      success: true,
      run_success: true,
      cost: 1.5,
      stdout: '3\n',
      stderr: '',
      reason: '',
    });
    expect(toCodeJudge({ ...sub, expected_output: '4' }, base).success).toBe(false);
    expect(toCodeJudge(sub, { ...base, status: 'timeout', exitCode: null })).toMatchObject({
      success: false,
      run_success: false,
      reason: 'worker_timeout',
    });
    expect(toCodeJudge(sub, { ...base, status: 'sandbox_error' }).reason).toBe('internal_error');
  });
});

describe('SandboxFusion mapping', () => {
  it('converts seconds and statuses', () => {
    expect(
      fromSandboxFusion({
        code: 'c',
        language: 'python',
        run_timeout: 2.5,
        memory_limit_MB: 512,
        stdin: 'i',
      }),
    ).toEqual({
      code: 'c',
      stdin: 'i',
      timeoutMs: 2500,
      memoryMb: 512,
    });
    expect(toSandboxFusion(base)).toMatchObject({
      status: 'Success',
      run_result: { status: 'Finished', execution_time: 1.5 },
    });
    expect(toSandboxFusion({ ...base, status: 'runtime_error', exitCode: 1 })).toMatchObject({
      status: 'Failed',
      run_result: { status: 'Finished', return_code: 1 },
    });
    expect(toSandboxFusion({ ...base, status: 'timeout', exitCode: null })).toMatchObject({
      status: 'Failed',
      run_result: { status: 'TimeLimitExceeded', return_code: null },
    });
    expect(toSandboxFusion({ ...base, status: 'sandbox_error', exitCode: null }).status).toBe('SandboxError');
  });
});
