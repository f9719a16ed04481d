import { fields } from '../redis-scripts.js';
import type { RunRequest } from '../types.js';
import { hold, type Job, type StreamEntry, type WorkerContext } from './context.js';
import { runJob } from './run-job.js';
import { screenJobs } from './screen.js';

/** New jobs for this consumer: one XREADGROUP of up to `free` entries, blocking at most 250 ms. */
export async function readNew(ctx: WorkerContext, free: number): Promise<StreamEntry[][]> {
  const { blocking, keys, consumer } = ctx;
  const res = (await blocking.xreadgroup(
    'GROUP',
    keys.group,
    consumer,
    'COUNT',
    free,
    'BLOCK',
    250,
    'STREAMS',
    keys.jobs,
    '>',
  )) as [string, [string, string[]][]][] | null;
  return res ? res.map(([, entries]) => entries) : [];
}

/** Stream entries to jobs; an entry deleted while pending is acknowledged and dropped. */
export function parseEntries(ctx: WorkerContext, entries: StreamEntry[]): Job[] {
  const jobs: Job[] = [];
  for (const [entryId, list] of entries) {
    if (!list) {
      void ctx.cmd.xack(ctx.keys.jobs, ctx.keys.group, entryId).catch(() => {});
      continue;
    }
    const f = fields(list);
    let request: RunRequest | Error;
    try {
      request = JSON.parse(f.p ?? '{}') as RunRequest;
    } catch (e) {
      request = e as Error;
    }
    jobs.push({ entryId, f, request });
  }
  return jobs;
}

/** Starts the jobs taken that are still wanted (SCREEN drops the others without running them). */
export async function launch(ctx: WorkerContext, entries: StreamEntry[]): Promise<void> {
  const jobs = parseEntries(ctx, entries);
  if (jobs.length === 0) return;
  for (const job of await screenJobs(ctx, jobs)) hold(ctx, job.entryId, () => runJob(ctx, job));
}
