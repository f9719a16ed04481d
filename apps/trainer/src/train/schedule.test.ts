import { hashSeed } from '@agentrl/protocol';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../config/load.js';
import { evalOptionsOf } from '../eval/options.js';
import { checkpointDue, sftTag, stepTag } from './checkpoints.js';
import type { TrainContext } from './context.js';
import { evalDue } from './eval-phase.js';

const ctxOf = (overrides: Record<string, unknown>) => {
  const cfg = resolveConfig({ overrides });
  return { cfg, totalRl: cfg.rl.stages.reduce((s, st) => s + st.steps, 0) } as TrainContext;
};
const due = (ctx: TrainContext, f: (c: TrainContext, step: number) => boolean) =>
  Array.from({ length: ctx.totalRl }, (_, i) => i + 1).filter((s) => f(ctx, s));

describe('the eval and checkpoint schedules of the RL loop', () => {
  it('every k steps and always after the last one; 0 = the last only', () => {
    const stages = [
      { name: 'a', steps: 5, maxResponseTokens: 64 },
      { name: 'b', steps: 2, maxResponseTokens: 64 },
    ];
    const ctx = ctxOf({ rl: { stages }, eval: { everySteps: 3 }, checkpointEvery: 2 });
    expect(due(ctx, evalDue)).toEqual([3, 6, 7]);
    expect(due(ctx, checkpointDue)).toEqual([2, 4, 6, 7]);
    const rare = ctxOf({ rl: { stages }, eval: { everySteps: 0 }, checkpointEvery: 0 });
    expect(due(rare, evalDue)).toEqual([7]);
    expect(due(rare, checkpointDue)).toEqual([7]);
    expect([sftTag(12), stepTag(0), stepTag(123456)]).toEqual(['sft-000012', 'step-000000', 'step-123456']);
  });

  it('eval options come from the config alone: train and `agentrl eval` sample alike', () => {
    const cfg = resolveConfig({ preset: 'smoke', overrides: { seed: 9 } });
    expect(evalOptionsOf(cfg)).toEqual({
      k: 1,
      temperature: 0.6,
      maxResponseTokens: 96,
      maxTurnTokens: 64,
      seed: hashSeed(9, 'eval'),
      systemPrompt: null,
      rewardMode: 'boxed-integer',
    });
    expect(evalOptionsOf(cfg, 'boxed').rewardMode).toBe('boxed');
  });
});
