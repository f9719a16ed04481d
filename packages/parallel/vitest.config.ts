import { packageTestConfig } from '../../vitest.shared.ts';

// mpirun tests start real processes; one file at a time keeps two ranks on two cores.
export default packageTestConfig('@agentrl/parallel', { testTimeout: 120_000, fileParallelism: false });
