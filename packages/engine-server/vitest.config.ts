import { packageTestConfig } from '../../vitest.shared.ts';

// The server tests start a second process and load the Qwen3 tokenizer: give them time.
export default packageTestConfig('@agentrl/engine-server', { testTimeout: 120_000 });
