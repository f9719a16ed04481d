import cliProgress from 'cli-progress';

/** Terminal progress: a bar with ETA and the key metrics of the last step; plain lines when not a TTY. */
export interface Progress {
  start(total: number, startValue: number, phase: string): void;
  update(value: number, metrics: Record<string, number | string>): void;
  log(line: string): void;
  stop(): void;
}

export function createProgress(enabled: boolean): Progress {
  const tty = enabled && process.stderr.isTTY === true;
  if (!tty) {
    return {
      start: (total, startValue, phase) => process.stderr.write(`[${phase}] ${startValue}/${total}\n`),
      update: (value, metrics) => process.stderr.write(`  step ${value} ${formatMetrics(metrics)}\n`),
      log: (line) => process.stderr.write(`${line}\n`),
      stop: () => {},
    };
  }
  const bar = new cliProgress.SingleBar(
    {
      format: '{phase} [{bar}] {value}/{total} | ETA {eta_formatted} | {metrics}',
      stream: process.stderr,
      hideCursor: true,
      etaBuffer: 8,
      clearOnComplete: false,
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
      process.stderr.write(`${line}\n`);
      running = false;
    },
    stop() {
      if (running) bar.stop();
      running = false;
    },
  };
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
