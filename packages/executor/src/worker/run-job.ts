import { errorResult } from '../requests.js';
import type { RunResult } from '../types.js';
import type { Job, WorkerContext } from './context.js';
import { publish } from './reply.js';

/** Runs one job on the worker's pool and publishes what came of it. */
export async function runJob(ctx: WorkerContext, { entryId, f, request }: Job): Promise<void> {
  let result: RunResult;
  try {
    if (request instanceof Error) throw request;
    result = await ctx.pool.run(request);
  } catch (e) {
    result = errorResult(e as Error, 0); // an invalid request is answered, not retried forever
  }
  await publish(ctx, entryId, f, result);
}
