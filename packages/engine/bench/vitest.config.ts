import { defineConfig } from 'vitest/config';

// The benchmark runs under vitest because its tfjs-core baseline needs Vite's module resolution.
export default defineConfig({
  resolve: { conditions: ['@agentrl/source'] },
  ssr: { resolve: { conditions: ['@agentrl/source'], externalConditions: ['@agentrl/source'] } },
  test: { include: ['bench/**/*.bench-run.ts'], testTimeout: 1_800_000, reporters: ['default'] },
});
