import type { TrainConfigInput } from './schema.js';

/**
 * Named starting points. `tiny` is the default of `pnpm train`: a ~120K-parameter byte-level model
 * (2 layers x 64) that learns to call Python for 3x3-digit multiplication in ~5 minutes on two CPU cores. `smoke` is the smallest
 * config that still runs every part of the loop (CI), with RL steps that train on something (1x1
 * digits, a longer SFT, 32 samples a step). `learn` is tiny with a short RL phase, for the CI
 * check that the recipe learns. `roc` is tiny on the zero-padded task, where failed
 * tool calls inside correct answers are common (the RoC ablation). Presets are partial configs: the schema fills
 * the rest, and a config file and flags override them in that order.
 */
export const PRESETS = {
  tiny: {},
  smoke: {
    name: 'smoke',
    checkpointEvery: 2,
    model: {
      hiddenSize: 64,
      numLayers: 2,
      numHeads: 2,
      numKvHeads: 1,
      intermediateSize: 128,
      maxPositions: 640,
    },
    // 1x1 digits and a longer SFT: enough for some correct answers in RL at temperature 1, so
    // groups with mixed rewards give the RL steps something to train on.
    task: { digits: [1, 1], trainSize: 28, heldOutSize: 8 },
    sft: {
      examples: 64,
      steps: 300,
      batchSize: 8,
      warmupSteps: 2,
      lr: 5e-3,
      mix: { tool: 0.6, noTool: 0.2, toolErrorFixed: 0.2 },
    },
    rl: {
      stages: [
        { name: 'stage1', steps: 2, maxResponseTokens: 96 },
        { name: 'stage2', steps: 2, maxResponseTokens: 128, hardOnly: true },
      ],
      promptsPerStep: 4,
      n: 4,
      oversample: 8,
      maxTurns: 2,
      maxTurnTokens: 64,
      // At temperature 1 this SFT policy answers 0-6 % of the samples correctly, so whether two of
      // the four RL steps see a group with mixed rewards rests on the sampler's luck (one did after
      // the sampler moved to protocol's Rng); at 0.6 it is 6-16 %, and seeds 1-3 each train in 2-4 steps.
      temperature: 0.6,
    },
    eval: { k: 1, problems: 4, everySteps: 0, maxResponseTokens: 96 },
  },
  // The CI learning check (test/src/learning.test.ts): tiny's model, data and SFT unchanged, so the
  // cold start it checks is the default run's, then 15 RL steps and a 50-problem evaluation instead
  // of 50 steps and 200 problems (about half of tiny's wall time). Over seeds 11-18 the default run
  // was at 30-90 % after 10 RL steps and 75-90 % after 20.
  learn: {
    name: 'learn',
    checkpointEvery: 0,
    sft: { checkpointEvery: 0 },
    rl: { stages: [{ name: 'stage1', steps: 15, maxResponseTokens: 160 }] },
    eval: { problems: 50, everySteps: 0 },
  },
  roc: {
    name: 'roc',
    // Half the problems write a factor zero-padded (0427 * 318): the literal copy is a real Python
    // SyntaxError and int('0427') the fix, so correct answers are often reached after a failed
    // call, which is what Resample-on-Correct acts on (README, "The roc task").
    // 4x4 digits: on 3x3 the SFT policy already solved 98% of held-out problems in 4 samples.
    task: { digits: [4, 4], zeroPadShare: 0.5 },
    // 8-9 digits to copy into the call (4x4 digits, a padded factor's zero and int('...')) need a
    // longer cold start than tiny's 3x3: with 1000 steps and 25 % clean calls seeds 1-5 ended SFT at
    // 7.5-26.8 % held-out avg@4 (the copy loss still falling) and RL lifted tool use to ~99 % but
    // not the copying (24.5-59.5 % after 24 steps). 2000 steps and 40 % clean calls: seeds 1 and 5
    // at 75.5 % and 79.8 % after SFT (100 problems x 4), but over seeds 11-18 seed 11 ended RL at
    // 66.3 %; 3000 steps took it to 81.8 % (BENCHMARKS.md). The failing-then-fixed share stays 35 %.
    sft: { steps: 3000, mix: { tool: 0.4, noTool: 0.25, toolErrorFixed: 0.35 } },
    // A failed call costs its traceback (~170 bytes) and a second call inside the response
    // budget: tiny's 160-256 tokens end such trajectories at the budget before the fix, so no
    // positive ever has a failed call there. 448-512 leave room for one error and its fix.
    // 24 steps, the RoC ablation's length: the cold start now does the copying, RL the habits.
    rl: {
      stages: [
        { name: 'stage1', steps: 10, maxResponseTokens: 448 },
        { name: 'stage2', steps: 8, maxResponseTokens: 512 },
        { name: 'stage3', steps: 6, maxResponseTokens: 512, hardOnly: true },
      ],
      // 1e-3 (tiny's) collapsed the tool-call format by RL step 3 on seed 1 of the 3x3 version
      // with these long error-laden responses; 3e-4 climbed steadily (README).
      lr: 3e-4,
    },
    // 100 problems x 4 samples at 512-token budgets, every 12 RL steps: an eval costs what ~2 RL steps do.
    eval: { maxResponseTokens: 512, problems: 100, everySteps: 12 },
  },
} satisfies Record<string, TrainConfigInput>;

export type PresetName = keyof typeof PRESETS;
export const PRESET_NAMES = Object.keys(PRESETS) as PresetName[];
export const DEFAULT_PRESET: PresetName = 'tiny';
