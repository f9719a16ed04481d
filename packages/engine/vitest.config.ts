import { packageTestConfig } from '../../vitest.shared.ts';

export default packageTestConfig('@agentrl/engine', { testTimeout: 120_000 });
