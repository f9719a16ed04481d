import { packageTestConfig } from '../../vitest.shared.ts';

export default packageTestConfig('agentrl', { testTimeout: 60_000 });
