import type { MetricsRecord } from './metrics-log.js';
import { esc, lineChart, PALETTE, type Series } from './svg-chart.js';

/** Dash patterns of runs 1, 2, 3… where a chart's colours are taken by its keys ('' = solid). */
const RUN_DASHES = ['', '7 3', '2 2', '10 3 2 3'];

/** A run to draw: its label and its metrics (the first is the subject, the rest are overlaid). */
export interface ReportRun {
  label: string;
  records: MetricsRecord[];
  config?: unknown;
}

/** One chart: its title, the metrics it draws (each a line), their phase, and its y axis. */
interface Panel {
  title: string;
  keys: string[];
  phase: MetricsRecord['phase'];
  yLabel: string;
  yFormat?: 'percent';
  /** Why the panel can be flat by construction (shown only when it is). */
  flatReason?: string;
}

/**
 * One update per batch of fresh samples (no PPO epochs): the new policy is the one that sampled,
 * so the ratio is 1, nothing is clipped and the KL is 0, unless the rollout engine's log-probs
 * differ from the trainer's (a remote engine, bf16).
 */
const ON_POLICY = 'by construction: one update per batch of fresh samples, policy ratio 1';

/** Legend names of metric keys drawn together in one chart. */
const KEY_LABELS: Record<string, string> = {
  posToolErrorBefore: 'sampled (before RoC)',
  posToolErrorAfter: 'trained on (after RoC)',
  clipFracLow: 'low',
  clipFracHigh: 'high',
  timeGenerate: 'generate',
  timeTool: 'tool',
  timeTrain: 'train',
};

const PANELS: Panel[] = [
  {
    title: 'held-out accuracy (avg@k pass@1)',
    keys: ['accuracy'],
    phase: 'eval',
    yLabel: 'accuracy (%)',
    yFormat: 'percent',
  },
  {
    title: 'reward (mean over sampled trajectories)',
    keys: ['reward'],
    phase: 'rl',
    yLabel: 'mean reward (0–1)',
  },
  {
    title: 'tool-error ratio of positives: before / after RoC',
    keys: ['posToolErrorBefore', 'posToolErrorAfter'],
    phase: 'rl',
    yLabel: 'failed tool calls (%)',
    yFormat: 'percent',
  },
  {
    title: 'response length (sampled trajectories)',
    keys: ['responseLength'],
    phase: 'rl',
    yLabel: 'tokens',
  },
  { title: 'tool calls per trajectory', keys: ['toolCallsPerTrajectory'], phase: 'rl', yLabel: 'calls' },
  {
    title: 'clip fraction low / high',
    keys: ['clipFracLow', 'clipFracHigh'],
    phase: 'rl',
    yLabel: 'tokens clipped (%)',
    yFormat: 'percent',
    flatReason: ON_POLICY,
  },
  {
    title: 'approx KL (old vs new policy)',
    keys: ['approxKl'],
    phase: 'rl',
    yLabel: 'KL (nats/token)',
    flatReason: ON_POLICY,
  },
  { title: 'grad norm', keys: ['gradNorm'], phase: 'rl', yLabel: 'global L2 norm' },
  { title: 'generation throughput', keys: ['tokensPerSec'], phase: 'rl', yLabel: 'tokens/s' },
  {
    title: 'time per step: generate / tool / train',
    keys: ['timeGenerate', 'timeTool', 'timeTrain'],
    phase: 'rl',
    yLabel: 'seconds',
  },
  { title: 'SFT loss', keys: ['loss'], phase: 'sft', yLabel: 'cross-entropy (nats/token)' },
];

/** A self-contained HTML page (inline SVG, inline CSS, no scripts) with every training curve. */
export function renderReport(title: string, runs: ReportRun[]): string {
  const charts: string[] = [];
  for (const panel of PANELS) {
    const { keys, phase } = panel;
    const series: Series[] = [];
    runs.forEach((run, ri) => {
      for (const [ki, key] of keys.entries()) {
        const points = run.records
          .filter((r) => r.phase === phase && typeof r[key] === 'number')
          .map((r) => [r.step, r[key] as number] as [number, number]);
        if (points.length === 0) continue;
        const keyLabel = KEY_LABELS[key] ?? key;
        const label =
          runs.length > 1
            ? `${run.label}${keys.length > 1 ? ` ${keyLabel}` : ''}`
            : keys.length > 1
              ? keyLabel
              : run.label;
        // Several runs of several keys: colour says the key, dash says the run.
        series.push(
          runs.length > 1 && keys.length > 1
            ? {
                label,
                points,
                color: PALETTE[ki % PALETTE.length]!,
                dash: RUN_DASHES[ri % RUN_DASHES.length]!,
              }
            : { label, points, dashed: ri > 0 },
        );
      }
    });
    const svg = lineChart(panel.title, series, {
      xLabel: phase === 'sft' ? 'SFT step' : 'RL step',
      yLabel: panel.yLabel,
      ...(panel.yFormat ? { yFormat: panel.yFormat } : {}),
      ...(panel.flatReason ? { flatReason: panel.flatReason } : {}),
    });
    if (svg) charts.push(`<figure data-metric="${esc(keys.join(' '))}">${svg}</figure>`);
  }
  const summary = runs.map((r) => summaryRow(r)).join('');
  const configs = runs
    .filter((r) => r.config)
    .map(
      (r) =>
        `<details><summary>config of ${esc(r.label)}</summary><pre>${esc(JSON.stringify(r.config, null, 2))}</pre></details>`,
    )
    .join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>body{font:14px system-ui,sans-serif;margin:24px;color:#111}figure{display:inline-block;margin:6px;vertical-align:top}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:4px 8px;text-align:right}th{background:#f5f5f5}
pre{background:#f7f7f7;padding:8px;overflow:auto;max-height:400px}</style></head><body>
<h1>${esc(title)}</h1>
<table><tr><th>run</th><th>held-out acc. start</th><th>held-out acc. end</th><th>RL steps</th><th>tool-error ratio, sampled positives</th><th>tool-error ratio, trained positives</th><th>response length, sampled</th><th>response length, positives</th><th>wall time</th></tr>${summary}</table>
<div>${charts.join('\n')}</div>${configs}
<p><small>generated by agentrl; every figure is inline SVG, the page needs no network.</small></p></body></html>\n`;
}

function summaryRow(run: ReportRun): string {
  const evals = run.records.filter((r) => r.phase === 'eval');
  const rl = run.records.filter((r) => r.phase === 'rl');
  const mean = (key: string, f: (v: number) => string = num) => {
    const v = rl.map((r) => r[key]).filter((x): x is number => typeof x === 'number');
    return v.length ? f(v.reduce((a, b) => a + b, 0) / v.length) : '–';
  };
  const acc = (r: MetricsRecord | undefined) => (typeof r?.accuracy === 'number' ? pct(r.accuracy) : '–');
  const wall = run.records.reduce(
    (m, r) => (typeof r.wallSeconds === 'number' ? Math.max(m, r.wallSeconds) : m),
    0,
  );
  return `<tr><td>${esc(run.label)}</td><td>${acc(evals[0])}</td><td>${acc(evals[evals.length - 1])}</td><td>${rl.length}</td><td>${mean('posToolErrorBefore', pct)}</td><td>${mean('posToolErrorAfter', pct)}</td><td>${mean('responseLength')}</td><td>${mean('responseLengthPositive')}</td><td>${wall ? `${wall.toFixed(0)} s` : '–'}</td></tr>`;
}

/** One arm of an ablation (e.g. RoC, plain GRPO): the same config over several seeds. */
export interface AblationArm {
  label: string;
  /** One run per seed; labels name the seed. */
  runs: ReportRun[];
}

/** Panels of the ablation page; each arm is drawn as mean with a min/max band. */
const ABLATION_PANELS: (Panel & { key: string })[] = [
  {
    title: 'tool-error ratio of positives (sampled, before RoC)',
    key: 'posToolErrorBefore',
    phase: 'rl',
    yLabel: 'failed tool calls (%)',
    yFormat: 'percent',
  },
  {
    title: 'tool-error ratio of positives (trained on, after RoC)',
    key: 'posToolErrorAfter',
    phase: 'rl',
    yLabel: 'failed tool calls (%)',
    yFormat: 'percent',
  },
  {
    title: 'held-out accuracy (avg@k pass@1)',
    key: 'accuracy',
    phase: 'eval',
    yLabel: 'accuracy (%)',
    yFormat: 'percent',
  },
  { title: 'response length (sampled)', key: 'responseLength', phase: 'rl', yLabel: 'tokens' },
  { title: 'response length of positives', key: 'responseLengthPositive', phase: 'rl', yLabel: 'tokens' },
  { title: 'tool calls per trajectory', key: 'toolCallsPerTrajectory', phase: 'rl', yLabel: 'calls' },
  {
    title: 'reward (mean over sampled trajectories)',
    key: 'reward',
    phase: 'rl',
    yLabel: 'mean reward (0–1)',
  },
].map((p) => ({ ...p, keys: [p.key] }) as Panel & { key: string });

/** Per step present in every run of the arm: [step, mean, std, min, max] of one metric across seeds. */
export function bandSeries(
  runs: readonly ReportRun[],
  key: string,
  phase: MetricsRecord['phase'],
): [number, number, number, number, number][] {
  const perRun = runs.map((run) => {
    const m = new Map<number, number>();
    for (const r of run.records) if (r.phase === phase && typeof r[key] === 'number') m.set(r.step, r[key]);
    return m;
  });
  if (perRun.length === 0) return [];
  const steps = [...perRun[0]!.keys()].filter((s) => perRun.every((m) => m.has(s))).sort((a, b) => a - b);
  return steps.map((s) => {
    const v = perRun.map((m) => m.get(s)!);
    const { mean, std } = meanStd(v);
    return [s, mean, std, Math.min(...v), Math.max(...v)];
  });
}

function meanStd(v: readonly number[]): { mean: number; std: number } {
  const mean = v.reduce((a, b) => a + b, 0) / v.length;
  const std = Math.sqrt(v.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, v.length - 1));
  return { mean, std };
}

/** One arm's end-of-run figures: per seed, and mean / std / min / max across seeds. */
export interface AblationSummary {
  label: string;
  seeds: number;
  /** metric -> per-seed values and their spread. */
  metrics: Record<string, { perSeed: number[]; mean: number; std: number; min: number; max: number }>;
}

/**
 * The figures an ablation is judged by, per arm. RL-step metrics are averaged over a window of
 * steps per seed (one step of a tiny run is noisy): `Start` = the first quarter of RL steps,
 * `End` = the last quarter. Accuracy is the held-out evaluation before RL (`accuracyStart`) and the
 * last one (`accuracyEnd`), also pass@k.
 */
export function summarizeAblation(arms: readonly AblationArm[]): AblationSummary[] {
  const keys = [
    'posToolErrorBefore',
    'posToolErrorAfter',
    'responseLength',
    'responseLengthPositive',
    'toolCallsPerTrajectory',
    'reward',
  ];
  return arms.map((arm) => {
    const perSeed: Record<string, number[]> = {};
    const add = (k: string, v: number | undefined) => {
      if (typeof v === 'number' && Number.isFinite(v)) perSeed[k] = [...(perSeed[k] ?? []), v];
    };
    for (const run of arm.runs) {
      const rl = run.records.filter((r) => r.phase === 'rl');
      const q = Math.max(1, Math.floor(rl.length / 4));
      for (const k of keys) {
        const window = (rs: MetricsRecord[]) => {
          const v = rs.map((r) => r[k]).filter((x): x is number => typeof x === 'number');
          return v.length ? v.reduce((a, b) => a + b, 0) / v.length : undefined;
        };
        add(`${k}Start`, window(rl.slice(0, q)));
        add(`${k}End`, window(rl.slice(-q)));
      }
      const evals = run.records.filter((r) => r.phase === 'eval');
      add('accuracyStart', evals[0]?.accuracy as number | undefined);
      add('accuracyEnd', evals.at(-1)?.accuracy as number | undefined);
      add('passAtKEnd', evals.at(-1)?.passAtK as number | undefined);
      const wall = run.records.reduce(
        (m, r) => (typeof r.wallSeconds === 'number' ? Math.max(m, r.wallSeconds) : m),
        0,
      );
      add('wallSeconds', wall);
    }
    const metrics: AblationSummary['metrics'] = {};
    for (const [k, v] of Object.entries(perSeed)) {
      metrics[k] = { perSeed: v, ...meanStd(v), min: Math.min(...v), max: Math.max(...v) };
    }
    return { label: arm.label, seeds: arm.runs.length, metrics };
  });
}

/**
 * The ablation page: for each metric one chart with every arm's mean across seeds as a line and
 * its min/max across seeds as a shaded band, a table of end-of-run figures (mean ± std [min, max]),
 * then each seed's own curves (the plain report, all runs overlaid).
 */
export function renderAblationReport(title: string, arms: readonly AblationArm[]): string {
  const charts: string[] = [];
  for (const panel of ABLATION_PANELS) {
    const { key, phase } = panel;
    const series: Series[] = [];
    arms.forEach((arm, ai) => {
      const rows = bandSeries(arm.runs, key, phase);
      if (rows.length === 0) return;
      series.push({
        label: `${arm.label} mean, min–max of ${arm.runs.length} seed${arm.runs.length === 1 ? '' : 's'}`,
        points: rows.map(([s, m]) => [s, m]),
        band: rows.map(([s, , , lo, hi]) => [s, lo, hi]),
        dashed: ai > 0,
      });
    });
    const svg = lineChart(panel.title, series, {
      xLabel: phase === 'eval' ? 'RL step (evaluated after it)' : 'RL step',
      yLabel: panel.yLabel,
      width: 480,
      ...(panel.yFormat ? { yFormat: panel.yFormat } : {}),
    });
    if (svg) charts.push(`<figure data-metric="${esc(key)}">${svg}</figure>`);
  }
  const summary = summarizeAblation(arms);
  const cols = ABLATION_COLUMNS;
  const head = `<tr><th>arm</th><th>seeds</th>${cols.map(([h]) => `<th>${esc(h)}</th>`).join('')}</tr>`;
  const body = summary
    .map(
      (s) =>
        `<tr><td>${esc(s.label)}</td><td>${s.seeds}</td>${cols
          .map(([, k, f]) => {
            const m = s.metrics[k];
            return `<td>${m ? `${f(m.mean)} ± ${f(m.std)} [${f(m.min)}, ${f(m.max)}]` : '–'}</td>`;
          })
          .join('')}</tr>`,
    )
    .join('');
  const perRun = renderReport(
    title,
    arms.flatMap((a) => a.runs),
  );
  const perRunBody = perRun.slice(perRun.indexOf('<table>'), perRun.indexOf('<p><small>'));
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>body{font:14px system-ui,sans-serif;margin:24px;color:#111}figure{display:inline-block;margin:6px;vertical-align:top}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:4px 8px;text-align:right}th{background:#f5f5f5}
pre{background:#f7f7f7;padding:8px;overflow:auto;max-height:400px}</style></head><body>
<h1>${esc(title)}</h1>
<p>Each arm: the mean across seeds (line) and the min–max across seeds (band). RL-step figures in the
table are per-seed averages over the first or last quarter of the RL steps, then mean ± std [min, max] across seeds.</p>
<table>${head}${body}</table>
<div>${charts.join('\n')}</div>
<h2>every run</h2>
${perRunBody}
<p><small>generated by agentrl; every figure is inline SVG, the page needs no network.</small></p></body></html>\n`;
}

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;
const num = (v: number) => v.toFixed(1);

/** The end-of-run figures an ablation is compared by: label, `summarizeAblation` key, format. */
export const ABLATION_COLUMNS: readonly (readonly [string, string, (v: number) => string])[] = [
  ['held-out acc. before RL', 'accuracyStart', pct],
  ['held-out acc. end', 'accuracyEnd', pct],
  ['pass@k end', 'passAtKEnd', pct],
  ['pos. tool-error ratio, first quarter', 'posToolErrorBeforeStart', pct],
  ['pos. tool-error ratio, last quarter', 'posToolErrorBeforeEnd', pct],
  ['trained-on pos. tool-error ratio, last quarter', 'posToolErrorAfterEnd', pct],
  ['response length, first quarter', 'responseLengthStart', num],
  ['response length, last quarter', 'responseLengthEnd', num],
  ['response length of positives, last quarter', 'responseLengthPositiveEnd', num],
  ['tool calls / trajectory, last quarter', 'toolCallsPerTrajectoryEnd', (v) => v.toFixed(2)],
  ['reward, last quarter', 'rewardEnd', pct],
  ['wall time (s)', 'wallSeconds', num],
];
