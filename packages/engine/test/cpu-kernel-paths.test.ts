// The CPU kernel paths (avx512 / avx2 / portable, chosen at load time: @agentrl/native cpuKernels)
// against each other, the path switch and its environment override. The oracle, batch-invariance and
// SGEMM tests run once per path themselves (describeEachCpuKernelPath).
import { spawnSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CPU_KERNEL_PATHS,
  type CpuKernelPath,
  cpuKernels,
  listBackends,
  setCpuKernels,
} from '@agentrl/native';
import { afterAll, describe, expect, it } from 'vitest';
import { packSequences } from '../src/batch.js';
import { createModel } from '../src/model.js';
import { edgeConfig, notExercised, rel } from './helpers.js';

const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const initial = cpuKernels();
afterAll(() => setCpuKernels(initial.active));

// every edge of the products (helpers.ts); the 300-token sequence also gives P V two k-blocks
const config = edgeConfig();
const seqs = [300, 40, 9].map((len, s) => Array.from({ length: len }, (_, t) => (t * 7 + s * 13 + 1) % 50));

/** Training logits, loss and gradients, and the decode path's logits, all computed on `path`. */
function outputsOn(path: CpuKernelPath) {
  setCpuKernels(path);
  const model = createModel(config, { seed: 21 });
  const batch = packSequences(seqs);
  const logits = model.forwardLogits(batch);
  model.zeroGrad();
  const { loss } = model.sftLoss(batch, new Uint8Array(batch.tokenIds.length).fill(1));
  const grads = Float32Array.from(model.parameters().flatMap((p) => Array.from(p.grad)));
  const native = model.native;
  native.packForDecode(model.handle, model.version);
  const caches = [native.createCache(model.handle), native.createCache(model.handle)];
  const decode = new Float32Array(2 * 50);
  // a 70-token prefill beside a 1-token one: panel products, cached scores and values
  const feeds = [seqs[0]!.slice(0, 70), [3]];
  native.extendInvariant(
    model.handle,
    caches,
    Int32Array.from(feeds.flat()),
    Int32Array.from(feeds, (f) => f.length),
    decode,
  );
  return { logits, loss, grads, decode };
}

describe('CPU kernel paths', () => {
  it('reports the active path, those this CPU runs and those compiled in (best first)', () => {
    expect(initial.compiled).toContain('portable');
    expect(initial.supported.at(-1)).toBe('portable');
    for (const p of initial.supported) expect(initial.compiled).toContain(p);
    const order = (xs: string[]) => xs.map((x) => CPU_KERNEL_PATHS.indexOf(x as CpuKernelPath));
    expect(order(initial.compiled)).toEqual([...order(initial.compiled)].sort((a, b) => a - b));
    const forced = process.env.AGENTRL_CPU_KERNELS;
    expect(initial.active).toBe(forced ? forced : initial.supported[0]);
    if (process.arch === 'x64') expect(initial.compiled).toEqual(['avx512', 'avx2', 'portable']);
  });

  it('setCpuKernels switches every kernel, and listBackends names the active path', () => {
    for (const path of initial.supported) {
      expect(setCpuKernels(path).active).toBe(path);
      expect(cpuKernels().active).toBe(path);
      const cpu = listBackends().find((b) => b.name === 'cpu');
      expect(cpu?.detail).toContain(`CPU kernels: ${path}`);
      expect(cpu?.operations.engineTrain.detail).toContain(path);
    }
    setCpuKernels(initial.active);
  });

  it('setCpuKernels refuses a misspelt path, naming the valid choices and what this CPU runs', () => {
    const runs = initial.supported.join(', ');
    expect(() => setCpuKernels('avx3' as CpuKernelPath)).toThrow(
      `'avx3' is not a CPU kernel path; valid choices: avx512, avx2, portable (this CPU runs: ${runs})`,
    );
    expect(() => setCpuKernels(2 as unknown as CpuKernelPath)).toThrow(TypeError);
    expect(cpuKernels().active).toBe(initial.active);
  });

  const unsupported = initial.compiled.find((p) => !initial.supported.includes(p));
  it.skipIf(!unsupported)(
    `setCpuKernels refuses a path this CPU cannot run, with the features it lacks${unsupported ? '' : ' (this CPU runs every compiled path: nothing to refuse)'}`,
    () => {
      expect(() => setCpuKernels(unsupported!)).toThrow(
        new RegExp(`this CPU cannot run the ${unsupported} kernels: it lacks [a-z0-9, ]+ \\(this CPU runs: `),
      );
      expect(cpuKernels().active).toBe(initial.active);
    },
  );

  it('AGENTRL_CPU_KERNELS forces a path in a new process; a bad value fails the load with the choices', () => {
    const run = (value: string) =>
      spawnSync(
        process.execPath,
        [
          '--conditions=@agentrl/source',
          '--import',
          'tsx',
          '-e',
          "import('@agentrl/native').then((n) => console.log(JSON.stringify(n.cpuKernels()))).catch((e) => { console.error(e.code, e.message); process.exit(3); })",
        ],
        { cwd: packageRoot, env: { ...process.env, AGENTRL_CPU_KERNELS: value }, encoding: 'utf8' },
      );
    const ok = run('portable');
    expect(ok.stderr).toBe('');
    expect(JSON.parse(ok.stdout).active).toBe('portable');
    const bad = run('avx3');
    expect(bad.status).toBe(3);
    expect(bad.stderr).toContain(
      "CPU_KERNELS_UNAVAILABLE agentrl: AGENTRL_CPU_KERNELS=avx3: 'avx3' is not a CPU kernel path; valid choices: avx512, avx2, portable",
    );
    if (unsupported) {
      const refused = run(unsupported);
      expect(refused.status).toBe(3);
      expect(refused.stderr).toContain(`this CPU cannot run the ${unsupported} kernels`);
    }
  });

  describe('each path against portable (portable has no FMA on x86-64: it rounds products and sums apart)', () => {
    const portable = outputsOn('portable');
    for (const path of ['avx512', 'avx2'] as const) {
      it.skipIf(!initial.supported.includes(path))(
        `${path}: training logits, loss, gradients and decode logits within 2e-5 of portable${notExercised(path)}`,
        () => {
          const got = outputsOn(path);
          expect(rel(got.logits, portable.logits, 1e-6)).toBeLessThan(2e-5);
          expect(Math.abs(got.loss - portable.loss) / Math.abs(portable.loss)).toBeLessThan(2e-6);
          expect(rel(got.grads, portable.grads, 1e-6)).toBeLessThan(2e-5);
          expect(rel(got.decode, portable.decode, 1e-6)).toBeLessThan(2e-5);
          if (path === 'avx2' && process.arch === 'x64') {
            // FMA against separate roundings: the paths do differ, so the bounds above are not vacuous.
            expect(Buffer.from(got.grads.buffer).equals(Buffer.from(portable.grads.buffer))).toBe(false);
          }
        },
      );
    }

    const both = notExercised('avx512') || notExercised('avx2');
    it.skipIf(both !== '')(
      `avx512 against avx2: the same within 2e-5 (their products are bit-identical, see sgemm-paths.test.ts; the norms' and dot products' vectorised sums are grouped by vector width)${both}`,
      () => {
        const a = outputsOn('avx512');
        const b = outputsOn('avx2');
        expect(rel(a.logits, b.logits, 1e-6)).toBeLessThan(2e-5);
        expect(rel(a.grads, b.grads, 1e-6)).toBeLessThan(2e-5);
        expect(rel(a.decode, b.decode, 1e-6)).toBeLessThan(2e-5);
      },
    );
  });
});
