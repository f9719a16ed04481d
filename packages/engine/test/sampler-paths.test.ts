// The native sampler on every CPU kernel path this machine runs, each in its own process with
// AGENTRL_CPU_KERNELS set (fixtures/sampler-paths-child.ts): each native loop (tempered probabilities
// with their sum and argmax, the draw walk, the top-p collection, the rank scan) and sampleToken as a
// whole (tokens, logprobs) equal the float64 JavaScript they replaced (jsSamplerLoops) bit for bit,
// on random rows of 1 to 151,936 logits of seven shapes at temperatures 0, 0.6, 1 and 1.3.
import { spawnSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CPU_KERNEL_PATHS } from '@agentrl/native';
import { describe, expect, it } from 'vitest';
import { samplerBinding } from '../src/native.js';
import { notExercised } from './helpers.js';

const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const child = fileURLToPath(new URL('./fixtures/sampler-paths-child.ts', import.meta.url));

describe('native sampler against the JavaScript reference', () => {
  for (const path of CPU_KERNEL_PATHS) {
    const why = notExercised(path);
    it.skipIf(why !== '')(`${path} CPU kernels: the same bits on every row${why}`, () => {
      const r = spawnSync(process.execPath, ['--conditions=@agentrl/source', '--import', 'tsx', child], {
        cwd: packageRoot,
        env: { ...process.env, AGENTRL_CPU_KERNELS: path },
        encoding: 'utf8',
      });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const out = JSON.parse(r.stdout) as { active: string; rows: number; mismatches: string[] };
      expect(out.active).toBe(path);
      expect(out.rows).toBe(168);
      expect(out.mismatches).toEqual([]);
    });
  }

  it('refuses bad rows with the reason (the native guard, not only the TS layer)', () => {
    const s = samplerBinding();
    const logits = new Float32Array(4);
    expect(() => s.temperedProbs(logits, 1, new Float64Array(3))).toThrow(
      'engine: temperedProbs: probs has 3 elements, fewer than the 4 logits',
    );
    expect(() => s.temperedProbs(logits, 0, new Float64Array(4))).toThrow('t must be > 0');
    expect(() =>
      s.temperedProbs(new Float64Array(4) as unknown as Float32Array, 1, new Float64Array(4)),
    ).toThrow('logits has the wrong dtype: expected a Float32Array');
    expect(() => s.drawInIdOrder(new Float64Array(2), 3, 0.5)).toThrow('n must be an integer in [0, 2]');
    expect(() => s.collectAtLeast(new Float64Array(4), 4, 0, new Float64Array(2))).toThrow(
      'values must hold at least n elements',
    );
    expect(() => s.expF64(new Float64Array(4), new Float64Array(3))).toThrow(
      'out has 3 elements, expected 4',
    );
    try {
      s.nthEqual(new Float64Array(2), 2, 0, -1);
      expect.unreachable();
    } catch (e) {
      expect((e as { code?: string }).code).toBe('ENGINE_INVALID_ARGUMENT');
    }
  });
});
