import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';

/** One line of metrics.jsonl. `phase` tells SFT steps, RL steps and evaluations apart. */
export interface MetricsRecord {
  phase: 'sft' | 'rl' | 'eval';
  /** SFT: the SFT step; RL and eval: the global RL step (eval at step 0 = before RL). */
  step: number;
  stage: string;
  [metric: string]: unknown;
}

/** Append-only metrics.jsonl; each record is one `write` of one line, so a kill leaves at most a torn last line. */
export class MetricsLog {
  constructor(readonly path: string) {}

  append(record: MetricsRecord): void {
    appendFileSync(this.path, `${JSON.stringify(record)}\n`);
  }

  read(): MetricsRecord[] {
    return readMetrics(this.path);
  }

  /**
   * On resume: keep what the checkpoint already covers (all SFT lines when SFT finished, RL/eval
   * lines up to the checkpoint's step) and drop the rest, torn lines included, so the resumed run
   * appends exactly what an uninterrupted run would have written.
   */
  truncateTo(keep: (r: MetricsRecord) => boolean): number {
    const kept = this.read().filter(keep);
    writeFileSync(this.path, kept.map((r) => `${JSON.stringify(r)}\n`).join(''));
    return kept.length;
  }
}

export function readMetrics(path: string): MetricsRecord[] {
  if (!existsSync(path)) return [];
  const out: MetricsRecord[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line) as MetricsRecord);
    } catch {
      // a torn last line from a kill -9: ignored here, removed by truncateTo on resume
    }
  }
  return out;
}

/** Metric keys that measure wall time or speed: they differ between runs and are left out of comparisons. */
export const TIMING_KEYS = /^(time|tokensPerSec|wall|eta)/;

/** A record without its timing fields (for resume-equivalence checks). */
export function withoutTiming(r: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(r).filter(([k]) => !TIMING_KEYS.test(k)));
}
