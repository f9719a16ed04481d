import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const child = fileURLToPath(new URL('./fixtures/native-boundary-child.mjs', import.meta.url));

/** Runs one case of the child script in its own process: a crash fails the case, not the runner. */
function run(name: string): {
  threw: boolean;
  code?: string;
  message?: string;
  isError?: boolean;
  fuzzThrew?: number;
} {
  const r = spawnSync(process.execPath, [child, name], { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) {
    throw new Error(
      `case "${name}" killed its process (status ${r.status}, signal ${r.signal}): ${r.stderr.slice(-500)}`,
    );
  }
  return JSON.parse(r.stdout.trim().split('\n').pop() as string);
}

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
