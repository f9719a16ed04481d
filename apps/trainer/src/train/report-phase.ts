import { writeFileSync } from 'node:fs';
import { renderReport } from '../run/report.js';
import type { TrainContext } from './context.js';

/** Rewrites report.html from metrics.jsonl (lead rank only). */
export function writeRunReport(ctx: TrainContext): void {
  if (!ctx.lead) return;
  const { cfg, run, log } = ctx;
  writeFileSync(
    run.reportPath,
    renderReport(`agentrl run ${cfg.name}`, [{ label: cfg.name, records: log.read(), config: cfg }]),
  );
}

/** The last eval of the run's metrics (null on other ranks, or when none ran yet). */
export function lastEval(ctx: TrainContext): { accuracy: number; passAtK: number } | null {
  const evals = (ctx.lead ? ctx.log.read() : []).filter((r) => r.phase === 'eval');
  const last = evals[evals.length - 1];
  return last ? { accuracy: last.accuracy as number, passAtK: last.passAtK as number } : null;
}
