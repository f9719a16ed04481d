import { CPU_KERNEL_PATHS, type CpuKernelPath, cpuKernels, setCpuKernels } from '@agentrl/native';
import { afterAll, beforeAll, describe } from 'vitest';

export { tinyModelConfig as tinyConfig } from '../src/testing.js';

/** log-softmax of row r of [rows, V] logits at column c. */
export function logSoftmaxAt(logits: Float32Array, V: number, r: number, c: number): number {
  let max = Number.NEGATIVE_INFINITY;
  for (let j = 0; j < V; j++) max = Math.max(max, logits[r * V + j] ?? 0);
  let sum = 0;
  for (let j = 0; j < V; j++) sum += Math.exp((logits[r * V + j] ?? 0) - max);
  return (logits[r * V + c] ?? 0) - max - Math.log(sum);
}

/** max |a - b| / max(|b|, floor): one number per tensor, robust to entries near zero. */
export function rel(a: ArrayLike<number>, b: ArrayLike<number>, floor = 1e-12): number {
  let num = 0;
  let den = floor;
  for (let i = 0; i < b.length; i++) {
    num = Math.max(num, Math.abs((a[i] ?? 0) - (b[i] ?? 0)));
    den = Math.max(den, Math.abs(b[i] ?? 0));
  }
  return num / den;
}

/** Why `path` will not run here (for a skipped test's title), or '' when it will. */
export function notExercised(path: CpuKernelPath): string {
  const { compiled, supported } = cpuKernels();
  if (!compiled.includes(path)) return ': not compiled into this addon, not exercised';
  return supported.includes(path) ? '' : ': not supported by this CPU, not exercised';
}

/**
 * One describe block per CPU kernel path (avx512, avx2, portable: see @agentrl/native cpuKernels),
 * with that path active for its tests. A path this machine cannot run stays in the output as a
 * skipped block whose title says it was not exercised.
 */
export function describeEachCpuKernelPath(title: string, body: (path: CpuKernelPath) => void): void {
  for (const path of CPU_KERNEL_PATHS) {
    const why = notExercised(path);
    describe.skipIf(why !== '')(`${title} [${path} CPU kernels${why}]`, () => {
      let before: CpuKernelPath | undefined;
      beforeAll(() => {
        before = cpuKernels().active;
        setCpuKernels(path);
      });
      afterAll(() => {
        if (before) setCpuKernels(before);
      });
      body(path);
    });
  }
}
