import { MetricsLog } from '../run/metrics-log.js';
import type { RunDir } from '../run/run-dir.js';
import { readState, type TrainerState } from './state.js';

/**
 * Loads the trainer state of a run's latest checkpoint and trims metrics.jsonl to it. A run killed
 * during SFT before its first checkpoint has none: its metrics are cleared and SFT restarts (null).
 */
export function prepareResume(
  run: RunDir,
  opts: { truncate?: boolean } = {},
): { state: TrainerState; checkpointDir: string } | null {
  // Ranks other than the lead of a data-parallel job read the state and leave the metrics alone.
  const log = opts.truncate === false ? null : new MetricsLog(run.metricsPath);
  const tag = run.latestCheckpoint();
  if (!tag) {
    log?.truncateTo(() => false);
    return null;
  }
  const dir = run.checkpointDir(tag);
  const state = readState(dir);
  log?.truncateTo((r) =>
    state.sftDone
      ? r.phase === 'sft' || r.step <= state.rlStep
      : r.phase === 'sft' && r.step <= state.sftStep,
  );
  return { state, checkpointDir: dir };
}
