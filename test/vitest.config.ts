import { packageTestConfig } from '../vitest.shared.ts';

// The smoke run trains a model: generous timeout, files one at a time (they share two cores).
export default packageTestConfig('@agentrl/test', { testTimeout: 240_000, fileParallelism: false });
