import { ExecutorError } from '../errors.js';
import { fields, REAP } from '../redis-scripts.js';
import { errorResult } from '../requests.js';
import { hold, type StreamEntry, type WorkerContext } from './context.js';
import { publish } from './reply.js';

/** Heartbeat: re-claiming our own jobs resets their idle time, so long runs are not retaken. */
export function startHeartbeat(ctx: WorkerContext): NodeJS.Timeout {
  const { cmd, keys, consumer, active } = ctx;
  return setInterval(
    () => {
      if (active.size === 0) return;
      void cmd.xclaim(keys.jobs, keys.group, consumer, 0, ...active, 'JUSTID').catch(() => {});
    },
    Math.max(50, Math.floor(ctx.opts.visibilityMs / 3)),
  );
}

/** When this worker last looked for dead workers' jobs and for dead consumers (ms since the epoch). */
export interface RetakeClock {
  lastReclaim: number;
  lastReap: number;
}

/**
 * Every min(1 s, visibilityMs / 2): takes over up to `free` jobs of workers that stopped
 * heart-beating for visibilityMs (XAUTOCLAIM), answering the poison ones. When there are none left
 * to retake, removes the consumers of dead workers (REAP, at most every min(reapAfterMs / 2, 5 s)).
 * Returns the retaken jobs to run, or undefined when none were retaken.
 */
export async function retake(
  ctx: WorkerContext,
  free: number,
  clock: RetakeClock,
): Promise<StreamEntry[] | undefined> {
  const { cmd, keys, consumer, opts } = ctx;
  if (Date.now() - clock.lastReclaim <= Math.min(1000, opts.visibilityMs / 2)) return undefined;
  clock.lastReclaim = Date.now();
  const [, claimed] = (await cmd.xautoclaim(
    keys.jobs,
    keys.group,
    consumer,
    opts.visibilityMs,
    '0-0',
    'COUNT',
    free,
  )) as [string, StreamEntry[]];
  if (claimed.length > 0) return dropPoison(ctx, claimed);
  // Nothing left to retake: consumers that are silent and hold nothing are dead workers.
  if (Date.now() - clock.lastReap > Math.min(ctx.reapAfterMs / 2, 5000)) {
    clock.lastReap = Date.now();
    ctx.tally.reaped += (await cmd.eval(REAP, 1, keys.jobs, keys.group, consumer, ctx.reapAfterMs)) as number;
  }
  return undefined;
}

/** Answers jobs that already took down maxDeliveries workers, so one job cannot kill the fleet. */
async function dropPoison(ctx: WorkerContext, claimed: StreamEntry[]): Promise<StreamEntry[]> {
  const ids = claimed.map(([id]) => id);
  const info = (await ctx.cmd.xpending(
    ctx.keys.jobs,
    ctx.keys.group,
    ids[0] as string,
    ids.at(-1) as string,
    ids.length + ctx.active.size + 16,
    ctx.consumer,
  )) as [string, string, number, number][];
  const deliveries = new Map(info.map(([id, , , count]) => [id, count]));
  const keep: StreamEntry[] = [];
  for (const entry of claimed) {
    const [entryId, list] = entry;
    const count = deliveries.get(entryId) ?? 0;
    if (!list || count <= ctx.opts.maxDeliveries) {
      keep.push(entry);
      continue;
    }
    const f = fields(list);
    const err = new ExecutorError(
      'WORKER_CRASHED',
      `job ${f.j} was taken ${count - 1} times by workers that died before answering; not retrying it`,
    );
    hold(ctx, entryId, () => publish(ctx, entryId, f, errorResult(err, 0)));
  }
  return keep;
}
