import { writeFileSync } from 'node:fs';
import { formatToolOutcome, wrapToolResponse } from '@agentrl/rollout';
import { buildSftDemos, type SftDemo } from '../task/sft-data.js';
import { pruneSftCheckpoints, sftTag, stepTag, writeCheckpoint } from './checkpoints.js';
import type { TrainContext } from './context.js';
import { evalPhase } from './eval-phase.js';
import { writeRunReport } from './report-phase.js';
import { runSft, tokenizeDemo } from './sft.js';

/**
 * Stage 0, the SFT cold start, resumed after its last checkpoint; then the eval at step 0 and the
 * `step-000000` checkpoint that RL starts from. `demos`: transcripts of sft.files, or null to
 * generate demonstrations from the training split.
 */
export async function sftPhase(ctx: TrainContext, demos: SftDemo[] | null): Promise<void> {
  const { cfg, state } = ctx;
  if (cfg.sft.enabled && cfg.sft.steps > 0) await sftSteps(ctx, demos ?? (await generateDemos(ctx)));
  await ctx.env.syncWeights(0);
  await evalPhase(ctx, 0, 'sft');
  state.sftDone = true;
  await writeCheckpoint(ctx, stepTag(0));
  if (ctx.lead) pruneSftCheckpoints(ctx.run, null);
  writeRunReport(ctx);
}

function generateDemos(ctx: TrainContext): Promise<SftDemo[]> {
  const { cfg, env } = ctx;
  return buildSftDemos(ctx.split.train, {
    seed: cfg.seed,
    examples: cfg.sft.examples,
    mix: cfg.sft.mix,
    systemPrompt: cfg.task.systemPrompt,
    runTool: (code) => env.executor.run({ code, timeoutMs: cfg.executor.timeoutMs }),
    renderToolResponse: (o) => wrapToolResponse(formatToolOutcome(o, cfg.rl.toolResponseMaxChars)),
  });
}

/** The SFT optimizer steps after state.sftStep, each logged, with a resume checkpoint every sft.checkpointEvery. */
async function sftSteps(ctx: TrainContext, demos: SftDemo[]): Promise<void> {
  const { cfg, env, state, progress, lead } = ctx;
  if (lead) writeFileSync(ctx.run.sftDataPath, demos.map((d) => JSON.stringify(d)).join('\n') + '\n');
  const sequences = demos.map((d) =>
    tokenizeDemo(d, env.chatFormat, env.tokenizer, { maskDirectAnswer: cfg.sft.maskDirectAnswers }),
  );
  progress.start(cfg.sft.steps, state.sftStep, 'sft');
  await runSft({
    cfg,
    sequences,
    policy: ctx.policy,
    firstStep: state.sftStep + 1,
    onStep: async (step, m) => {
      if (lead) {
        const { loss, gradNorm, lr, tokens } = m;
        const record = { phase: 'sft', step, stage: 'sft', loss, gradNorm, lr, tokens } as const;
        ctx.log.append({ ...record, timeTrain: m.seconds, wallSeconds: ctx.wall() });
      }
      progress.update(step, { loss: m.loss, lr: m.lr });
      state.sftStep = step;
      const every = cfg.sft.checkpointEvery;
      if (every > 0 && step % every === 0 && step < cfg.sft.steps) {
        await writeCheckpoint(ctx, sftTag(step));
        if (lead) pruneSftCheckpoints(ctx.run, sftTag(step));
      }
    },
  });
  progress.stop();
}
