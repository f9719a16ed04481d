import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runBoundaryCase } from './boundary-case.js';

const child = fileURLToPath(new URL('./fixtures/native-boundary-child.mjs', import.meta.url));

const run = (...argv: string[]) => runBoundaryCase(child, ...argv);

const cases = run('list') as unknown as string[];

describe('the engine and kernels native boundaries refuse bad calls natively (each case in its own process)', () => {
  it('covers every kind of bad call', () => {
    expect(cases.length).toBeGreaterThan(35);
  });
  it.each(cases)('%s: a JS Error with a code', (name) => {
    const r = run(name);
    expect(r.threw, `${name} did not throw`).toBe(true);
    expect(r.isError).toBe(true);
    expect(r.code).toMatch(
      name.startsWith('kernels:') ? /^KERNELS_INVALID_ARGUMENT$/ : /^ENGINE_INVALID_ARGUMENT$/,
    );
    expect(r.message).toMatch(name.startsWith('kernels:') ? /./ : /^engine: /);
  });

  it('swapped handles name the handle kind', () => {
    expect(run('model handle as cache').message).toMatch(
      /expected a KV cache handle, got another kind of handle/,
    );
    expect(run('cache handle as model').message).toMatch(/expected a model handle/);
    expect(run('extend with a zero count').message).toMatch(/counts\[1\] is 0, must be >= 1/);
    expect(run('short dHidden').message).toMatch(/dHidden has 32 elements, expected 128/);
  });

  it('fuzzing: random handles, arrays and numbers give a result or a JS error with a code, never a crash', () => {
    const r = run('fuzz');
    expect(r.fuzzThrew).toBeGreaterThan(100);
  });
});
