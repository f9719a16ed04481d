import type { TrainConfigInput } from './schema.js';

/**
 * Named starting points. `tiny` is the default of `pnpm train`: a ~120K-parameter byte-level model
 * (2 layers x 64) that learns to call Python for 3x3-digit multiplication in ~5 minutes on two CPU cores. `smoke` is the smallest
 * config that still runs every part of the loop (CI), with RL steps that train on something (1x1
 * digits, a longer SFT, 32 samples a step). Presets are partial configs: the schema fills
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
    },
    eval: { k: 1, problems: 4, everySteps: 0, maxResponseTokens: 96 },
  },
} satisfies Record<string, TrainConfigInput>;

export type PresetName = keyof typeof PRESETS;
export const PRESET_NAMES = Object.keys(PRESETS) as PresetName[];
export const DEFAULT_PRESET: PresetName = 'tiny';
