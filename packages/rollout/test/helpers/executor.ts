import { createExecutor, type Executor } from '@agentrl/executor';
import { afterAll, beforeAll } from 'vitest';

/**
 * The real @agentrl/executor (embedded pool: sandboxed Python fork servers) for a test file; the
 * tests' Python tool runs through it. Started once per file and closed after it.
 */
export function useExecutor(): () => Executor {
  let executor: Executor | undefined;
  beforeAll(async () => {
    executor = await createExecutor({ mode: 'embedded', concurrency: 2, timeoutMs: 10_000 });
  }, 60_000);
  afterAll(async () => {
    await executor?.close();
  });
  return () => {
    if (!executor) throw new Error('the executor has not started');
    return executor;
  };
}
