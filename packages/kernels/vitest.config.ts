import { packageTestConfig } from '../../vitest.shared.ts';

export default packageTestConfig('@agentrl/kernels', { testTimeout: 60_000 });
