/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MetricsRecord } from '../src/run/metrics-log.js';
import { type ReportRun, renderAblationReport, renderReport } from '../src/run/report.js';

/**
 * report.html and the ablation page as a person sees them: rendered from real runs' metrics
 * (test/fixtures/report) in headless Chromium from Debian's packages (CI installs `chromium`),
 * screenshotted, then checked from the DOM and the pixels: axis labels on every chart, % ticks
 * where the table says %, no text cut at the chart's edge, legend entries that neither overlap
 * nor go missing, every series visible, flat panels labelled.
 */
const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures/report');
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
const out = mkdtempSync(join(tmpdir(), 'agentrl-report-'));

function run(seed: number): ReportRun {
  const text = readFileSync(join(FIXTURES, `roc-s${seed}.jsonl`), 'utf8');
  const records = text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as MetricsRecord);
  return { label: `roc-s${seed}`, records };
}

/** What the page shows of each chart, measured by the browser. */
interface ChartFacts {
  title: string;
  width: number;
  height: number;
  xLabel: string;
  yLabel: string;
  yTicks: string[];
  flatNote: string;
  series: number;
  legend: { x: number; y: number; w: number; h: number }[];
  plotBottom: number;
  /** Text boxes that reach outside the SVG (the text is cut there). */
  clipped: string[];
}

async function chartFacts(page: Page): Promise<ChartFacts[]> {
  return page.$$eval('figure svg', (svgs) =>
    svgs.map((svg) => {
      const box = svg.getBoundingClientRect();
      const rel = (el: Element) => {
        const r = el.getBoundingClientRect();
        return { x: r.left - box.left, y: r.top - box.top, w: r.width, h: r.height };
      };
      const text = (sel: string) => svg.querySelector(sel)?.textContent ?? '';
      const plot = svg.querySelector('rect')!.getBoundingClientRect();
      return {
        title: text('text.title'),
        width: box.width,
        height: box.height,
        xLabel: text('text.axis-label.x'),
        yLabel: text('text.axis-label.y'),
        yTicks: [...svg.querySelectorAll('text.tick.y')].map((t) => t.textContent ?? ''),
        flatNote: text('text.flat-note'),
        series: svg.querySelectorAll('path.series').length,
        legend: [...svg.querySelectorAll('g.legend-entry')].map(rel),
        plotBottom: plot.bottom - box.top,
        clipped: [...svg.querySelectorAll('text')]
          .filter((t) => {
            const r = rel(t);
            return r.x < -0.5 || r.y < -0.5 || r.x + r.w > box.width + 0.5 || r.y + r.h > box.height + 0.5;
          })
          .map((t) => t.textContent ?? ''),
      };
    }),
  );
}

/**
 * Pixels of each series' colour inside the plot area of every chart, from a screenshot of the
 * figure (decoded by the browser): a series hidden under another has next to none.
 */
async function seriesPixels(page: Page): Promise<{ title: string; counts: number[] }[]> {
  const figures = await page.$$('figure');
  const result: { title: string; counts: number[] }[] = [];
  for (const fig of figures) {
    const png = (await fig.screenshot()).toString('base64');
    result.push(
      await fig.evaluate(async (el, data) => {
        const svg = el.querySelector('svg')!;
        const img = new Image();
        img.src = `data:image/png;base64,${data}`;
        await img.decode();
        const canvas = document.createElement('canvas');
        canvas.width = img.width;
        canvas.height = img.height;
        const ctx = canvas.getContext('2d')!;
        ctx.drawImage(img, 0, 0);
        const figBox = el.getBoundingClientRect();
        const plot = svg.querySelector('rect')!.getBoundingClientRect();
        const [px, py] = [plot.left - figBox.left, plot.top - figBox.top];
        const pixels = ctx.getImageData(px, py, plot.width, plot.height).data;
        const paths = [...svg.querySelectorAll('path.series')];
        const counts = paths.map((p) => {
          const [r, g, b] = (p.getAttribute('stroke') ?? '#000000')
            .slice(1)
            .match(/../g)!
            .map((h: string) => Number.parseInt(h, 16));
          const alpha = Number(p.getAttribute('stroke-opacity') ?? 1);
          // the stroke as it shows over the white plot background
          const want = [r!, g!, b!].map((c) => alpha * c + (1 - alpha) * 255);
          let n = 0;
          for (let i = 0; i < pixels.length; i += 4)
            if (want.every((c, k) => Math.abs(pixels[i + k]! - c) < 24)) n++;
          return n;
        });
        return { title: svg.querySelector('text.title')?.textContent ?? '', counts };
      }, png),
    );
  }
  return result;
}

const ci = Boolean(process.env.CI);

describe.skipIf(!CHROMIUM && !ci)('report pages in headless Chromium', () => {
  let browser: Browser;
  let page: Page;
  const runs = [run(11), run(12), run(13)];

  beforeAll(async () => {
    if (!CHROMIUM) throw new Error('chromium is not installed: apt-get install chromium (.ci/run does)');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1500, height: 1000 }, deviceScaleFactor: 1 });
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function open(name: string, html: string): Promise<ChartFacts[]> {
    const file = join(out, `${name}.html`);
    writeFileSync(file, html);
    await page.goto(`file://${file}`);
    const shot = join(out, `${name}.png`);
    await page.screenshot({ path: shot, fullPage: true });
    expect(readFileSync(shot).length).toBeGreaterThan(20_000);
    return chartFacts(page);
  }

  function checkCharts(charts: ChartFacts[]): void {
    for (const c of charts) {
      expect(c.xLabel, `${c.title}: x-axis label`).toMatch(/step/);
      expect(c.yLabel.length, `${c.title}: y-axis label`).toBeGreaterThan(2);
      expect(c.clipped, `${c.title}: text cut at the edge`).toEqual([]);
      // every series has its legend entry, below the plot, none on top of another
      expect(c.legend, c.title).toHaveLength(c.series);
      for (const [i, a] of c.legend.entries()) {
        expect(a.y, `${c.title}: legend entry ${i} below the plot`).toBeGreaterThan(c.plotBottom);
        for (const b of c.legend.slice(i + 1)) {
          const overlap = a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
          expect(overlap, `${c.title}: legend entries overlap`).toBe(false);
        }
      }
    }
  }

  it('report.html of three runs: labelled axes, %, whole legends, every series visible', async () => {
    const charts = await open('report', renderReport('three seeds', runs));
    expect(charts.length).toBeGreaterThanOrEqual(10);
    checkCharts(charts);
    const byTitle = (t: string) => charts.find((c) => c.title.startsWith(t))!;
    expect(byTitle('held-out accuracy').yTicks.every((t) => t.endsWith('%'))).toBe(true);
    expect(byTitle('held-out accuracy').yLabel).toBe('accuracy (%)');
    expect(byTitle('SFT loss').yLabel).toMatch(/nats\/token/);
    // three runs x three timings: nine legend entries, all there
    expect(byTitle('time per step').legend).toHaveLength(9);
    // flat by construction, and said so
    expect(byTitle('approx KL').flatNote).toMatch(/^flat: every value is 0 \(by construction/);
    expect(byTitle('clip fraction').flatNote).toMatch(/^flat: every value is 0% \(by construction/);
    expect(byTitle('reward').flatNote).toBe('');
    for (const { title, counts } of await seriesPixels(page))
      for (const [i, n] of counts.entries())
        expect(n, `${title}: series ${i} visible (pixels of its colour)`).toBeGreaterThan(25);
  });

  it('the ablation page: bands, % axes, legends that wrap instead of colliding', async () => {
    const html = renderAblationReport('ablation', [
      { label: 'roc @8923d42', runs: [runs[0]!, runs[1]!] },
      { label: 'roc @7399cad', runs: [runs[2]!] },
    ]);
    const charts = await open('ablation', html);
    checkCharts(charts);
    const tool = charts.find((c) => c.title.startsWith('tool-error ratio of positives (sampled'))!;
    expect(tool.yTicks.every((t) => t.endsWith('%'))).toBe(true);
    expect(
      tool.yTicks.filter((t) => t.startsWith('-')),
      'a ratio has no negative ticks',
    ).toEqual([]);
    expect(tool.legend).toHaveLength(2);
    expect(tool.flatNote).toMatch(/^flat: every value is 0%/);
    for (const { title, counts } of await seriesPixels(page))
      for (const [i, n] of counts.entries()) expect(n, `${title}: series ${i} visible`).toBeGreaterThan(25);
  });
});
