import { describe, expect, it } from 'vitest';
import type { MetricsRecord } from './metrics-log.js';
import { bandSeries, renderAblationReport, summarizeAblation } from './report.js';

const rl = (step: number, v: Record<string, number>): MetricsRecord => ({
  phase: 'rl',
  step,
  stage: 's',
  ...v,
});
const ev = (step: number, accuracy: number): MetricsRecord => ({ phase: 'eval', step, stage: 's', accuracy });

const seedA = {
  label: 'a',
  records: [
    ev(0, 0.2),
    ...[0.35, 0.3, 0.25, 0.2].map((v, i) => rl(i + 1, { posToolErrorBefore: v })),
    ev(4, 0.5),
  ],
};
const seedB = {
  label: 'b',
  records: [ev(0, 0.3), ...[1, 2, 3].map((s) => rl(s, { posToolErrorBefore: 0.2 })), ev(4, 0.7)],
};

describe('ablation report', () => {
  it('bands: mean, std, min and max across seeds at the steps every seed has', () => {
    const rows = bandSeries([seedA, seedB], 'posToolErrorBefore', 'rl');
    expect(rows.map((r) => r[0])).toEqual([1, 2, 3]);
    const [step, mean, std, lo, hi] = rows[0]!;
    expect([step, lo, hi]).toEqual([1, 0.2, 0.35]);
    expect(mean).toBeCloseTo(0.275);
    expect(std).toBeCloseTo(Math.SQRT2 * 0.075);
  });

  it('summary: first / last quarter of RL per seed, last evaluation, spread across seeds', () => {
    const [arm] = summarizeAblation([{ label: 'x', runs: [seedA, seedB] }]);
    expect(arm!.metrics.posToolErrorBeforeStart!.perSeed).toEqual([0.35, 0.2]);
    expect(arm!.metrics.posToolErrorBeforeEnd!.perSeed).toEqual([0.2, 0.2]);
    expect(arm!.metrics.accuracyEnd).toMatchObject({ perSeed: [0.5, 0.7], min: 0.5, max: 0.7 });
    expect(arm!.metrics.accuracyEnd!.mean).toBeCloseTo(0.6);
  });

  it('the page draws one band per arm and the table with mean ± std [min, max]', () => {
    const page = renderAblationReport('t', [
      { label: 'RoC', runs: [seedA, seedB] },
      { label: 'GRPO', runs: [seedB] },
    ]);
    const fig = /<figure data-metric="posToolErrorBefore">([\s\S]*?)<\/figure>/.exec(page)![1]!;
    expect(fig.match(/<polygon class="band"/g)).toHaveLength(2);
    expect(page).toMatch(/<td>RoC<\/td><td>2<\/td><td>25\.0% ± 7\.1% \[20\.0%, 30\.0%\]<\/td>/);
    expect(page).not.toMatch(/<script/);
  });
});
