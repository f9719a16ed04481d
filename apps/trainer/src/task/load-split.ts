import type { TrainConfig } from '../config/schema.js';
import { loadDatasetFiles } from '../data/dataset.js';
import { Rng } from '../rng.js';
import { generateMultiplySplit } from './multiply.js';
import type { ProblemSplit } from './problem.js';

/** The run's problems: the seeded synthetic split, or dataset files (skipped rows reported). */
export async function loadSplit(
  cfg: TrainConfig,
  log: (line: string) => void = () => {},
): Promise<ProblemSplit> {
  if (cfg.task.kind === 'multiply') {
    return generateMultiplySplit({
      seed: cfg.seed,
      digits: cfg.task.digits,
      trainSize: cfg.task.trainSize,
      heldOutSize: cfg.task.heldOutSize,
    });
  }
  const train = await loadDatasetFiles(cfg.task.trainFiles);
  if (train.skipped.length)
    log(`dataset: skipped ${train.skipped.length} training rows without a prompt or answer`);
  if (cfg.task.evalFiles.length > 0) {
    const held = await loadDatasetFiles(cfg.task.evalFiles);
    if (held.skipped.length)
      log(`dataset: skipped ${held.skipped.length} held-out rows without a prompt or answer`);
    return { train: train.problems, heldOut: held.problems };
  }
  // No held-out files: hold out a seeded share of the training rows.
  const shuffled = Rng.derive(cfg.seed, 'file-split').shuffle([...train.problems]);
  const k = Math.min(cfg.task.heldOutSize, Math.floor(shuffled.length / 5));
  return { heldOut: shuffled.slice(0, k), train: shuffled.slice(k) };
}
