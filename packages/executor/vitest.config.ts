import { packageTestConfig } from '../../vitest.shared.ts';

// Redis test files share one server and restart it in the fault tests, so files run one at a time.
export default packageTestConfig('@agentrl/executor', { testTimeout: 60_000, fileParallelism: false });
