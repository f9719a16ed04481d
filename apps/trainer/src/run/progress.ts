import cliProgress from 'cli-progress';
import { formatEta } from './format-eta.js';

/** Terminal progress: a bar with ETA and the key metrics of the last step; plain lines when not a TTY. */
export interface Progress {
  start(total: number, startValue: number, phase: string): void;
  update(value: number, metrics: Record<string, number | string>): void;
  log(line: string): void;
  stop(): void;
}

export interface ProgressOptions {
  /** Where lines go (default process.stderr); a TTY gets the bar. */
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Clock in ms, for tests (default Date.now). */
  now?: () => number;
}

/** Without a bar, a step line at most every this many ms, besides every 5% of the phase and its last step. */
const PLAIN_INTERVAL_MS = 10_000;

export function createProgress(enabled: boolean, opts: ProgressOptions = {}): Progress {
  const stream = opts.stream ?? process.stderr;
  if (!(enabled && stream.isTTY === true)) return createPlainProgress(stream, opts.now ?? Date.now);
  const bar = new cliProgress.SingleBar(
    {
      format: '{phase} [{bar}] {value}/{total} | ETA {eta_formatted} | {metrics}',
      stream,
      hideCursor: true,
      etaBuffer: 8,
      clearOnComplete: false,
      formatTime: formatEta,
    },
    cliProgress.Presets.shades_classic,
  );
  let running = false;
  let last = { total: 0, phase: '' };
  return {
    start(total, startValue, phase) {
      if (running) bar.stop();
      last = { total, phase };
      bar.start(total, startValue, { phase, metrics: '' });
      running = true;
    },
    update(value, metrics) {
      // A log line stopped the bar: draw it again below the line.
      if (!running) {
        bar.start(last.total, value, { phase: last.phase, metrics: '' });
        running = true;
      }
      bar.update(value, { metrics: formatMetrics(metrics) });
    },
    log(line) {
      if (running) bar.stop();
      stream.write(`${line}\n`);
      running = false;
    },
    stop() {
      if (running) bar.stop();
      running = false;
    },
  };
}

/**
 * `--no-progress` or not a terminal: one line per step would be 1000 lines for the tiny preset's
 * SFT, so a step is printed when it crosses the next 5% of the phase, when 10 s passed since the
 * last line (slow RL steps all show), and at the phase's last step; each line carries its ETA.
 */
function createPlainProgress(stream: NodeJS.WritableStream, now: () => number): Progress {
  let phase = { total: 0, first: 0, startedAt: 0, lastAt: 0, nextMark: 0 };
  return {
    start(total, startValue, name) {
      const t = now();
      phase = { total, first: startValue, startedAt: t, lastAt: t, nextMark: 0 };
      phase.nextMark = markAfter(startValue, total);
      stream.write(`[${name}] ${startValue}/${total}\n`);
    },
    update(value, metrics) {
      const t = now();
      const due = value >= phase.nextMark || value >= phase.total || t - phase.lastAt >= PLAIN_INTERVAL_MS;
      if (!due) return;
      phase.lastAt = t;
      phase.nextMark = markAfter(value, phase.total);
      const done = value - phase.first;
      const eta = done > 0 ? ((t - phase.startedAt) / 1000 / done) * (phase.total - value) : Number.NaN;
      stream.write(`  step ${value}/${phase.total} ETA ${formatEta(eta)} ${formatMetrics(metrics)}\n`);
    },
    log: (line) => stream.write(`${line}\n`),
    stop: () => {},
  };
}

/** The first step past `value` that crosses the next 5% of `total`. */
function markAfter(value: number, total: number): number {
  const every = Math.max(1, Math.ceil(total / 20));
  return (Math.floor(value / every) + 1) * every;
}

function formatMetrics(m: Record<string, number | string>): string {
  return Object.entries(m)
    .map(([k, v]) => `${k} ${typeof v === 'number' ? formatNumber(v) : v}`)
    .join(' ');
}

/** Three decimals, or three significant digits for small values (learning rates, KL) that would print as 0.000. */
function formatNumber(v: number): string {
  if (Number.isInteger(v)) return String(v);
  return v !== 0 && Math.abs(v) < 0.01 ? v.toExponential(2) : v.toFixed(3);
}
