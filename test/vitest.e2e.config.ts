import { packageTestConfig } from '../vitest.shared.ts';

/** `pnpm test:e2e`: the learning run (not in CI; about 20 minutes on two cores). */
const config = packageTestConfig('@agentrl/test-e2e', { testTimeout: 3_600_000, fileParallelism: false });
config.test = { ...config.test, include: ['e2e/**/*.e2e.ts'] };
export default config;
