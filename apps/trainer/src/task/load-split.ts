import { Rng } from '@agentrl/protocol';
import type { TrainConfig } from '../config/schema.js';
import { type LoadedDataset, loadDatasetFiles } from '../data/dataset.js';
import { normalizePrompt } from '../data/rows.js';
import { TrainerError } from '../errors.js';
import { generateMultiplySplit } from './multiply.js';
import type { ProblemSplit } from './problem.js';

/**
 * The run's problems: the seeded synthetic split, or dataset files. Skipped and duplicate rows are
 * reported; the held-out split never shares a normalised prompt with the training split.
 */
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
      zeroPadShare: cfg.task.zeroPadShare,
    });
  }
  const train = await loadDatasetFiles(cfg.task.trainFiles);
  report('training', train, log);
  if (cfg.task.evalFiles.length > 0) {
    const held = await loadDatasetFiles(cfg.task.evalFiles);
    report('held-out', held, log);
    const heldKeys = new Set(held.problems.map((p) => normalizePrompt(p.question)));
    const kept = train.problems.filter((p) => !heldKeys.has(normalizePrompt(p.question)));
    if (kept.length < train.problems.length)
      log(
        `dataset: left out ${train.problems.length - kept.length} training rows whose prompt is also in task.evalFiles`,
      );
    if (kept.length === 0)
      throw new TrainerError(
        'DATASET',
        `dataset: every training prompt in ${cfg.task.trainFiles.join(', ')} is also in task.evalFiles; train on other problems than you evaluate on`,
      );
    return { train: kept, heldOut: held.problems };
  }
  // No held-out files: hold out a seeded share of the (de-duplicated) training rows.
  const shuffled = Rng.derive(cfg.seed, 'file-split').shuffle([...train.problems]);
  const k = Math.min(cfg.task.heldOutSize, Math.floor(shuffled.length / 5));
  return { heldOut: shuffled.slice(0, k), train: shuffled.slice(k) };
}

function report(what: string, d: LoadedDataset, log: (line: string) => void): void {
  if (d.skipped.length) {
    const reasons = new Map<string, number>();
    for (const s of d.skipped) reasons.set(s.reason, (reasons.get(s.reason) ?? 0) + 1);
    const first = d.skipped[0]!;
    log(
      `dataset: skipped ${d.skipped.length} ${what} rows (${[...reasons].map(([r, n]) => `${n}: ${r}`).join('; ')}; first: ${first.file} row ${first.row})`,
    );
  }
  if (d.duplicates)
    log(
      `dataset: dropped ${d.duplicates} ${what} rows that repeat an earlier prompt${d.conflicts ? ` (${d.conflicts} with a different answer; the first row's answer is kept)` : ''}`,
    );
}
