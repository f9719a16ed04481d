import type { WorkerContext } from './context.js';
import { launch, readNew } from './intake.js';
import { ensureGroup } from './lifecycle.js';
import { type RetakeClock, retake } from './reclaim.js';

/**
 * The worker's intake loop until it stops: keeps up to twice the pool's concurrency of jobs held (so
 * the pool stays fed while results are published), retaking dead workers' jobs before reading new ones.
 */
export async function runLoop(ctx: WorkerContext): Promise<void> {
  const capacity = ctx.pool.config.concurrency * 2;
  const clock: RetakeClock = { lastReclaim: 0, lastReap: Date.now() };
  while (!ctx.stopping) {
    const free = Math.min(ctx.opts.batchSize, capacity - ctx.active.size);
    if (free <= 0) {
      await new Promise<void>((r) => {
        ctx.wake = r;
      });
      continue;
    }
    try {
      const retaken = await retake(ctx, free, clock);
      if (retaken) {
        await launch(ctx, retaken);
        continue;
      }
      for (const entries of await readNew(ctx, free)) await launch(ctx, entries);
    } catch (e) {
      if (String((e as Error).message).includes('NOGROUP')) {
        await ensureGroup(ctx.cmd, ctx.keys).catch(() => {}); // Redis restarted empty
      } else if (!ctx.stopping) {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
}
