import { fileURLToPath } from 'node:url';
import { listBackends } from '@agentrl/native';
import { describe, expect, it } from 'vitest';
import { runBoundaryCase } from './boundary-case.js';

const child = fileURLToPath(new URL('./fixtures/gpu-boundary-child.mjs', import.meta.url));

const run = (...argv: string[]) => runBoundaryCase(child, ...argv);

const cases = run('list') as unknown as string[];

// The device engine's entry points check what they are given before any device work, with the CPU
// engine's checks (engine_args.h) and the addon's one guard (napi_guard.h), so these run without a GPU.
describe('the device engine native boundary refuses bad calls before touching a device (each case in its own process)', () => {
  it('covers every kind of bad call', () => {
    expect(cases.length).toBeGreaterThan(40);
  });

  it.each(cases)('%s: a JS Error with ENGINE_INVALID_ARGUMENT', (name) => {
    const r = run(name);
    expect(r.threw, `${name} did not throw`).toBe(true);
    expect(r.isError).toBe(true);
    expect(r.code).toBe('ENGINE_INVALID_ARGUMENT');
    expect(r.message).toMatch(/^engine: /);
  });

  it('names what was wrong', () => {
    expect(run('forward: the CPU model handle').message).toBe(
      'engine: expected a device model handle, got another kind of handle',
    );
    expect(run('cacheLength: the CPU cache handle').message).toMatch(
      /expected a device KV cache handle, got another kind/,
    );
    expect(run('forward: tokens as Float32Array').message).toMatch(
      /tokenIds has the wrong dtype: expected a Int32Array/,
    );
    expect(run('reduceSetup: ends shorter than starts').message).toMatch(
      /bucket ends has 1 elements, expected 2/,
    );
    expect(run('createModel: unknown device').message).toMatch(/device must be cuda or rocm, got tpu/);
    expect(run('createModel: precision 2').message).toMatch(/precision must be an integer in \[0, 1\]/);
  });

  for (const device of ['cuda', 'rocm'] as const) {
    const backend = listBackends().find((b) => b.name === (device === 'rocm' ? 'hip' : 'cuda'));
    it(`a valid createModel on ${device} either runs or fails with ENGINE_NATIVE_FAILURE and the reason (${backend?.runnable ? 'runnable here' : 'not runnable here'})`, () => {
      const r = run('valid createModel', device);
      if (backend?.runnable) {
        expect(r.threw).toBe(false);
      } else {
        expect(r.code).toBe('ENGINE_NATIVE_FAILURE');
        expect(r.message).toMatch(/^engine: \S/);
      }
    });
  }
});
