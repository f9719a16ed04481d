import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

/**
 * Shared vitest settings: tests run on `src` through the `@agentrl/source` export condition (no build
 * needed), and in CI each package also writes a JSON report that `.ci/run` sums into one closing line.
 */
export function packageTestConfig(
  packageName: string,
  extra: { testTimeout?: number; fileParallelism?: boolean } = {},
) {
  const reportDir = process.env.AGENTRL_TEST_REPORT_DIR;
  const reporters: (string | [string, Record<string, unknown>])[] = ['default'];
  if (reportDir) {
    reporters.push(['json', { outputFile: resolve(reportDir, `${packageName.replace(/[@/]/g, '_')}.json`) }]);
  }
  return defineConfig({
    resolve: { conditions: ['@agentrl/source'] },
    ssr: { resolve: { conditions: ['@agentrl/source'], externalConditions: ['@agentrl/source'] } },
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      reporters,
      testTimeout: extra.testTimeout ?? 20_000,
      fileParallelism: extra.fileParallelism ?? true,
    },
  });
}
