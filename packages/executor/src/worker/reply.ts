import { COMPLETE } from '../redis-scripts.js';
import type { RunResult } from '../types.js';
import type { WorkerContext } from './context.js';

/**
 * Publishes a job's result on its caller's reply stream and acknowledges the job, in one script
 * (COMPLETE: first answer only, nothing for a caller whose lease lapsed). Retried until Redis takes
 * it: connections wait through restarts (maxRetriesPerRequest: null); a stopping worker gives up.
 */
export async function publish(
  ctx: WorkerContext,
  entryId: string,
  f: Record<string, string>,
  result: RunResult,
): Promise<void> {
  const { cmd, keys, opts, tally } = ctx;
  for (;;) {
    try {
      const outcome = await cmd.eval(
        COMPLETE,
        4,
        keys.jobs,
        keys.done(f.j ?? entryId),
        f.r ?? `${opts.prefix}reply:orphans`,
        f.l ?? '',
        keys.group,
        entryId,
        f.j ?? entryId,
        JSON.stringify(result),
        opts.doneTtlSeconds,
      );
      if (outcome === 1) tally.done++;
      else if (outcome === 2) tally.skips.abandoned++;
      return;
    } catch {
      if (ctx.stopping) return;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
