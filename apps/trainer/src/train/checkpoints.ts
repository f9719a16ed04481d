import { existsSync, readdirSync, rmSync } from 'node:fs';
import type { RunDir } from '../run/run-dir.js';
import type { TrainContext } from './context.js';
import { writeState } from './state.js';

const SFT_TAG = /^sft-\d{6}$/;
const pad = (step: number) => String(step).padStart(6, '0');
/** Tag of the checkpoint written after SFT step `step` (a resume point of SFT only). */
export const sftTag = (step: number) => `sft-${pad(step)}`;
/** Tag of the checkpoint after RL step `step` (`step-000000` = the end of SFT). */
export const stepTag = (step: number) => `step-${pad(step)}`;

/** Whether RL step `step` ends with a checkpoint: every checkpointEvery steps, and after the last. */
export function checkpointDue(ctx: TrainContext, step: number): boolean {
  const every = ctx.cfg.checkpointEvery;
  return (every > 0 && step % every === 0) || step === ctx.totalRl;
}

/** Writes the policy (weights, optimizer) and the trainer state as checkpoint `tag` (lead rank only). */
export async function writeCheckpoint(ctx: TrainContext, tag: string): Promise<void> {
  if (!ctx.lead) return;
  ctx.state.wallSeconds = ctx.wall();
  await ctx.run.writeCheckpoint(tag, async (dir) => {
    await ctx.policy.save(dir);
    writeState(dir, ctx.state);
  });
}

/** Removes the SFT checkpoints other than `keep` (they are only resume points of SFT itself). */
export function pruneSftCheckpoints(run: RunDir, keep: string | null): void {
  if (!existsSync(run.checkpointsDir)) return;
  for (const tag of readdirSync(run.checkpointsDir)) {
    if (SFT_TAG.test(tag) && tag !== keep) rmSync(run.checkpointDir(tag), { recursive: true, force: true });
  }
}
