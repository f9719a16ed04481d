import { SCREEN, Screen } from '../redis-scripts.js';
import type { Job, WorkerContext } from './context.js';

/**
 * The lease and deadline checks, just before running: SCREEN acknowledges and deletes the jobs nobody
 * wants any more (answered, cancelled, their caller's lease lapsed, too near their deadline), counted
 * as skips here. Returns the jobs to run.
 */
export async function screenJobs(ctx: WorkerContext, jobs: Job[]): Promise<Job[]> {
  const { cmd, keys, pool, tally } = ctx;
  const verdicts = (await cmd.eval(
    SCREEN,
    1 + 2 * jobs.length,
    keys.jobs,
    ...jobs.flatMap(({ entryId, f }) => [keys.done(f.j ?? entryId), f.l ?? '']),
    keys.group,
    ...jobs.flatMap(({ entryId, f, request }) => [
      entryId,
      f.d ?? '',
      request instanceof Error ? 0 : (request.timeoutMs ?? pool.config.timeoutMs),
    ]),
  )) as number[];
  return jobs.filter((_, i) => {
    const verdict = verdicts[i];
    if (verdict === Screen.EXPIRED) tally.skips.expired++;
    else if (verdict === Screen.ABANDONED) tally.skips.abandoned++;
    else if (verdict === Screen.ANSWERED) tally.skips.answered++;
    else if (verdict === Screen.CANCELLED) tally.skips.cancelled++;
    return verdict === Screen.RUN;
  });
}
