import { afterAll, beforeAll, describe } from 'vitest';
import { CPU_KERNEL_PATHS, type CpuKernelPath, cpuKernels, setCpuKernels } from './index.js';

/** Why `path` will not run here (for a skipped test's title), or '' when it will. */
export function notExercised(path: CpuKernelPath): string {
  const { compiled, supported } = cpuKernels();
  if (!compiled.includes(path)) return ': not compiled into this addon, not exercised';
  return supported.includes(path) ? '' : ': not supported by this CPU, not exercised';
}

/**
 * One vitest describe block per CPU kernel path (avx512, avx2, portable: see cpuKernels), with that
 * path active for its tests. A path this machine cannot run stays in the output as a skipped block
 * whose title says it was not exercised. The engine's and the kernels' tests share it.
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
