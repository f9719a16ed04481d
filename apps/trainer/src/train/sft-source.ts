import type { TrainConfig } from '../config/schema.js';
import { TrainerError } from '../errors.js';
import { parseFactors } from '../task/multiply.js';
import type { Problem } from '../task/problem.js';
import type { SftDemo } from '../task/sft-data.js';
import { loadSftTranscripts } from '../task/sft-files.js';

/**
 * Where the SFT cold start gets its demonstrations: `sft.files` transcripts (returned), or the
 * generator for multiplication problems (null). Training problems of any other kind without
 * transcripts stop here, before the run starts, instead of becoming bare `\boxed{answer}` turns.
 */
export async function loadSftSource(
  cfg: TrainConfig,
  train: readonly Problem[],
  log: (line: string) => void,
): Promise<SftDemo[] | null> {
  if (!cfg.sft.enabled || cfg.sft.steps === 0) return null;
  if (cfg.sft.files.length > 0) {
    const t = await loadSftTranscripts(cfg.sft.files, { systemPrompt: cfg.task.systemPrompt });
    if (t.skipped.length) {
      const first = t.skipped[0]!;
      log(
        `sft.files: skipped ${t.skipped.length} transcripts (first: ${first.file} row ${first.row}: ${first.reason})`,
      );
    }
    return t.demos;
  }
  if (!train.some((p) => parseFactors(p.question) !== null)) {
    throw new TrainerError(
      'DATASET',
      'sft: the training problems are not multiplication problems, the only ones the built-in generator writes demonstrations for; give SFT transcripts in sft.files (messages format, tool turns included) or skip the cold start with --sft.enabled false',
    );
  }
  return null;
}
