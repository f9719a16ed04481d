/** A named series of (x, y) points for one line of a chart. */
export interface Series {
  label: string;
  points: [number, number][];
  color?: string;
  dashed?: boolean;
  /** A shaded band around the line: [x, low, high] per point (e.g. min/max across seeds). */
  band?: [number, number, number][];
}

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2'];

/** A small self-contained SVG line chart (no scripts, no external assets): opens offline anywhere. */
export function lineChart(
  title: string,
  series: Series[],
  opts: { width?: number; height?: number; xLabel?: string } = {},
): string {
  const W = opts.width ?? 420;
  const H = opts.height ?? 220;
  const m = { l: 48, r: 12, t: 24, b: 34 };
  const all = series
    .flatMap((s) => [
      ...s.points,
      ...(s.band ?? []).flatMap(([x, lo, hi]): [number, number][] => [
        [x, lo],
        [x, hi],
      ]),
    ])
    .filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  if (all.length === 0) return '';
  let [x0, x1] = extent(all.map((p) => p[0]));
  let [y0, y1] = extent(all.map((p) => p[1]));
  if (x0 === x1) [x0, x1] = [x0 - 1, x1 + 1];
  if (y0 === y1) [y0, y1] = [y0 - (Math.abs(y0) || 1) * 0.1, y1 + (Math.abs(y1) || 1) * 0.1];
  const sx = (x: number) => m.l + ((x - x0) / (x1 - x0)) * (W - m.l - m.r);
  const sy = (y: number) => H - m.b - ((y - y0) / (y1 - y0)) * (H - m.t - m.b);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(title)}">`,
    `<text x="${m.l}" y="15" font-size="13" font-weight="600">${esc(title)}</text>`,
    `<rect x="${m.l}" y="${m.t}" width="${W - m.l - m.r}" height="${H - m.t - m.b}" fill="none" stroke="#ccc"/>`,
  ];
  for (const t of ticks(y0, y1)) {
    parts.push(`<line x1="${m.l}" x2="${W - m.r}" y1="${sy(t)}" y2="${sy(t)}" stroke="#eee"/>`);
    parts.push(`<text x="${m.l - 4}" y="${sy(t) + 4}" font-size="10" text-anchor="end">${fmt(t)}</text>`);
  }
  for (const t of ticks(x0, x1)) {
    parts.push(`<text x="${sx(t)}" y="${H - m.b + 14}" font-size="10" text-anchor="middle">${fmt(t)}</text>`);
  }
  if (opts.xLabel)
    parts.push(
      `<text x="${W - m.r}" y="${H - 4}" font-size="10" text-anchor="end">${esc(opts.xLabel)}</text>`,
    );
  series.forEach((s, i) => {
    const color = s.color ?? PALETTE[i % PALETTE.length]!;
    const pts = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
    if (pts.length === 0) return;
    const band = (s.band ?? []).filter((b) => b.every(Number.isFinite));
    if (band.length > 0) {
      const upper = band.map(([x, , hi]) => `${sx(x).toFixed(1)},${sy(hi).toFixed(1)}`);
      const lower = band.map(([x, lo]) => `${sx(x).toFixed(1)},${sy(lo).toFixed(1)}`).reverse();
      parts.push(
        `<polygon class="band" points="${[...upper, ...lower].join(' ')}" fill="${color}" fill-opacity="0.15" stroke="none"/>`,
      );
    }
    const d = pts.map(([x, y], j) => `${j ? 'L' : 'M'}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join('');
    parts.push(
      `<path d="${d}" fill="none" stroke="${color}" stroke-width="1.8"${s.dashed ? ' stroke-dasharray="5 3"' : ''}/>`,
    );
    if (pts.length <= 30)
      for (const [x, y] of pts)
        parts.push(`<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="2.2" fill="${color}"/>`);
    parts.push(
      `<text x="${m.l + 6 + i * 120}" y="${m.t + 12}" font-size="10" fill="${color}">${esc(s.label)}</text>`,
    );
  });
  parts.push('</svg>');
  return parts.join('');
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

function fmt(t: number): string {
  return Math.abs(t) >= 1000 || (Math.abs(t) < 0.01 && t !== 0)
    ? t.toExponential(1)
    : String(Number(t.toPrecision(3)));
}

export function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}
