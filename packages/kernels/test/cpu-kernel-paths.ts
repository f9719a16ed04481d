import { CPU_KERNEL_PATHS, type CpuKernelPath, cpuKernels, setCpuKernels } from '@agentrl/native';
import { afterAll, beforeAll, describe } from 'vitest';

/** Why `path` will not run here (for a skipped test's title), or '' when it will. */
export function notExercised(path: CpuKernelPath): string {
  const { compiled, supported } = cpuKernels();
  if (!compiled.includes(path)) return ': not compiled into this addon, not exercised';
  return supported.includes(path) ? '' : ': not supported by this CPU, not exercised';
}

/**
 * One describe block per CPU kernel path of the native addon (the SGEMM under the CPU fused-linear
 * loss), with that path active for its tests. A path this machine cannot run stays in the output as
 * a skipped block whose title says it was not exercised.
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
