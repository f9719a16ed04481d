/** A named series of (x, y) points for one line of a chart. */
export interface Series {
  label: string;
  points: [number, number][];
  color?: string;
  dashed?: boolean;
  /** An SVG stroke-dasharray (overrides `dashed`): runs told apart by dash where colour tells keys apart. */
  dash?: string;
  /** A shaded band around the line: [x, low, high] per point (e.g. min/max across seeds). */
  band?: [number, number, number][];
}

export interface ChartOptions {
  width?: number;
  /** Height of the plot and its axes; the legend adds a row per line it needs. */
  height?: number;
  xLabel?: string;
  /** What the y values are, with their unit: `tokens`, `accuracy (%)`. */
  yLabel?: string;
  /** `percent`: a ratio in [0, 1] shown as % (as the tables show it). */
  yFormat?: 'number' | 'percent';
  /** Why the panel is flat when every value is the same (shown with the value). */
  flatReason?: string;
}

export const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2'];
/** Width of a character of the 10 px labels, rounded up (system-ui averages ~5.5 px). */
const CHAR_W = 6.2;
const LEGEND_ROW = 15;

/** Where a chart draws: its size, the plot's frame and the data-to-pixel maps. */
interface Frame {
  W: number;
  plotH: number;
  m: { l: number; r: number; t: number; b: number };
  plotBottom: number;
  sx(x: number): number;
  sy(y: number): number;
  yFmt(v: number): string;
}

/**
 * A small self-contained SVG line chart (no scripts, no external assets): opens offline anywhere.
 * Axis labels on both axes; a legend below the plot that wraps to as many rows as its entries
 * need; series with equal points drawn widest first, so each shows around the next; a flat
 * panel says that it is flat, at which value, and why when the caller knows.
 */
export function lineChart(title: string, series: Series[], opts: ChartOptions = {}): string {
  const all = finitePoints(series);
  if (all.length === 0) return '';
  const [x0, x1] = xRange(all.map((p) => p[0]));
  const ys = extent(all.map((p) => p[1]));
  const flat = ys[0] === ys[1];
  const [y0, y1] = yRange(ys);
  const W = opts.width ?? 420;
  const plotH = opts.height ?? 220;
  const m = { l: 62, r: 18, t: 24, b: 40 };
  const plotBottom = plotH - m.b;
  const f: Frame = {
    W,
    plotH,
    m,
    plotBottom,
    sx: (x) => m.l + ((x - x0) / (x1 - x0)) * (W - m.l - m.r),
    sy: (y) => plotBottom - ((y - y0) / (y1 - y0)) * (plotBottom - m.t),
    yFmt: opts.yFormat === 'percent' ? fmtPercent : fmt,
  };
  const legend = layoutLegend(series, W - m.l - m.r);
  const H = plotH + legend.rows * LEGEND_ROW;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(title)}" font-family="system-ui,sans-serif">`,
    `<text class="title" x="${m.l}" y="15" font-size="13" font-weight="600">${esc(title)}</text>`,
    `<rect x="${m.l}" y="${m.t}" width="${W - m.l - m.r}" height="${plotBottom - m.t}" fill="none" stroke="#ccc"/>`,
    ...axisParts(f, ticks(x0, x1), ticks(y0, y1), opts),
    ...seriesParts(f, series),
    ...(flat ? [flatNote(f, ys[0], opts.flatReason)] : []),
    ...legend.entries.map(({ x, row }, i) => legendEntry(series[i]!, i, x, plotH + row * LEGEND_ROW + 4)),
    '</svg>',
  ].join('');
}

function xRange(xs: number[]): [number, number] {
  const [x0, x1] = extent(xs);
  return x0 === x1 ? [x0 - 1, x1 + 1] : [x0, x1];
}

/**
 * The y range drawn: a flat series gets a range around its value (one of non-negative values, a
 * ratio, stays >= 0), and 4% headroom keeps a line along the top or bottom whole, not half over the frame.
 */
function yRange([lo, hi]: [number, number]): [number, number] {
  let [y0, y1] = [lo, hi];
  if (y0 === y1) {
    const d = Math.abs(y0) * 0.1 || 1;
    [y0, y1] = [y0 >= 0 ? Math.max(0, y0 - d) : y0 - d, y1 + d];
  }
  const pad = (y1 - y0) * 0.04;
  return [y0 - pad, y1 + pad];
}

/** Grid lines, tick labels and the two axis labels. */
function axisParts(f: Frame, xTicks: number[], yTicks: number[], opts: ChartOptions): string[] {
  const { W, m, plotBottom, sx, sy } = f;
  const parts: string[] = [];
  for (const t of yTicks) {
    parts.push(`<line x1="${m.l}" x2="${W - m.r}" y1="${sy(t)}" y2="${sy(t)}" stroke="#eee"/>`);
    parts.push(
      `<text class="tick y" x="${m.l - 4}" y="${sy(t) + 3.5}" font-size="10" text-anchor="end">${f.yFmt(t)}</text>`,
    );
  }
  for (const t of xTicks) {
    const label = fmt(t);
    const half = (label.length * CHAR_W) / 2;
    // A tick label at either end of the axis is anchored inside the chart instead of cut off.
    const anchor = sx(t) + half > W - 1 ? 'end' : sx(t) - half < 1 ? 'start' : 'middle';
    parts.push(
      `<text class="tick x" x="${sx(t)}" y="${plotBottom + 14}" font-size="10" text-anchor="${anchor}">${label}</text>`,
    );
  }
  if (opts.xLabel)
    parts.push(
      `<text class="axis-label x" x="${(m.l + W - m.r) / 2}" y="${plotBottom + 30}" font-size="11" text-anchor="middle">${esc(opts.xLabel)}</text>`,
    );
  if (opts.yLabel) {
    const cy = (m.t + plotBottom) / 2;
    parts.push(
      `<text class="axis-label y" x="13" y="${cy}" font-size="11" text-anchor="middle" transform="rotate(-90 13 ${cy})">${esc(opts.yLabel)}</text>`,
    );
  }
  return parts;
}

/** Each series' band, line and (up to 30) point markers. */
function seriesParts(f: Frame, series: Series[]): string[] {
  const { sx, sy } = f;
  const widths = strokeWidths(series);
  return series.flatMap((s, i) => {
    const color = colorOf(s, i);
    const pts = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
    if (pts.length === 0) return [];
    const parts: string[] = [];
    const band = (s.band ?? []).filter((b) => b.every(Number.isFinite));
    if (band.length > 0) {
      const upper = band.map(([x, , hi]) => `${sx(x).toFixed(1)},${sy(hi).toFixed(1)}`);
      const lower = band.map(([x, lo]) => `${sx(x).toFixed(1)},${sy(lo).toFixed(1)}`).reverse();
      parts.push(
        `<polygon class="band" points="${[...upper, ...lower].join(' ')}" fill="${color}" fill-opacity="0.15" stroke="none"/>`,
      );
    }
    const width = widths[i]!;
    const d = pts.map(([x, y], j) => `${j ? 'L' : 'M'}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join('');
    parts.push(
      `<path class="series" data-series="${i}" d="${d}" fill="none" stroke="${color}" stroke-width="${width}"${dashOf(s)}/>`,
    );
    if (pts.length <= 30)
      for (const [x, y] of pts)
        parts.push(
          `<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="${(width / 2 + 0.6).toFixed(1)}" fill="${color}"/>`,
        );
    return parts;
  });
}

/** `flat: every value is 0% (why)`, wrapped to the plot's width. */
function flatNote(f: Frame, value: number, reason: string | undefined): string {
  const { W, m } = f;
  const note = `flat: every value is ${f.yFmt(value)}${reason ? ` (${reason})` : ''}`;
  const lines = wrap(note, Math.floor((W - m.l - m.r - 12) / CHAR_W));
  const spans = lines.map((l, i) => `<tspan x="${m.l + 6}" dy="${i ? 12 : 0}">${esc(l)}</tspan>`);
  return `<text class="flat-note" y="${m.t + 13}" font-size="10" fill="#555">${spans.join('')}</text>`;
}

function legendEntry(s: Series, i: number, x: number, y: number): string {
  const color = colorOf(s, i);
  return `<g class="legend-entry" data-series="${i}"><line x1="${x}" x2="${x + 16}" y1="${y - 3.5}" y2="${y - 3.5}" stroke="${color}" stroke-width="2.5"${dashOf(s)}/><text x="${x + 20}" y="${y}" font-size="10" fill="${color}">${esc(s.label)}</text></g>`;
}

function colorOf(s: Series, i: number): string {
  return s.color ?? PALETTE[i % PALETTE.length]!;
}

/**
 * 1.8 px lines, except where series have exactly the same points (a run's before/after RoC when
 * RoC dropped nothing, a flat 0): the first of k equal series is 1.8 + 3 (k - 1) px wide, the
 * next 3 px less, and so on, so every one of them shows as a band around the one drawn on it.
 */
function strokeWidths(series: Series[]): number[] {
  const keys = series.map((s) => JSON.stringify(s.points));
  return keys.map((k, i) => 1.8 + 3 * keys.slice(i + 1).filter((o) => o === k).length);
}

function dashOf(s: Series): string {
  const dash = s.dash ?? (s.dashed ? '6 3' : '');
  return dash ? ` stroke-dasharray="${dash}"` : '';
}

/** Legend entries flowed left to right below the plot, wrapping to a new row when one would not fit. */
function layoutLegend(
  series: Series[],
  width: number,
): { entries: { x: number; row: number }[]; rows: number } {
  const left = 62;
  let x = left;
  let row = 0;
  const entries = series.map((s) => {
    const w = 20 + s.label.length * CHAR_W + 14;
    if (x > left && x + w > left + width) {
      row++;
      x = left;
    }
    const at = { x, row };
    x += w;
    return at;
  });
  return { entries, rows: series.length ? row + 1 : 0 };
}

/** Words into lines of at most `width` characters (a longer word gets a line of its own). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width)
      lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines;
}

function finitePoints(series: Series[]): [number, number][] {
  return series
    .flatMap((s) => [
      ...s.points,
      ...(s.band ?? []).flatMap(([x, lo, hi]): [number, number][] => [
        [x, lo],
        [x, hi],
      ]),
    ])
    .filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
}

function extent(v: number[]): [number, number] {
  return [Math.min(...v), Math.max(...v)];
}

function ticks(a: number, b: number): number[] {
  const step = 10 ** Math.floor(Math.log10((b - a) / 4 || 1));
  const nice = [1, 2, 5, 10].map((k) => k * step).find((s) => (b - a) / s <= 5) ?? step * 10;
  const out: number[] = [];
  for (let t = Math.ceil(a / nice) * nice; t <= b + 1e-12; t += nice) out.push(Number(t.toPrecision(12)));
  return out;
}

/** Plain numbers (`1000`, `0.25`), thousands as `12k`, tiny values in exponent form (`2e-4`). */
function fmt(t: number): string {
  if (t === 0) return '0';
  if (Math.abs(t) >= 10_000) return `${Number((t / 1000).toPrecision(3))}k`;
  if (Math.abs(t) < 0.01) return t.toExponential(0);
  return String(Number(t.toPrecision(3)));
}

/** A ratio as a percentage with no more decimals than the ticks need: `25%`, `2.5%`, `0.1%`. */
function fmtPercent(t: number): string {
  return `${Number((t * 100).toPrecision(3))}%`;
}

export function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}
