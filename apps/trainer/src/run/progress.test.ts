import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { formatEta } from './format-eta.js';
import { createProgress } from './progress.js';

describe('formatEta', () => {
  it('writes seconds, minutes and hours without 60s or 60m and says -- while unknown', () => {
    expect(formatEta(0)).toBe('0s');
    expect(formatEta(59.4)).toBe('59s');
    expect(formatEta(59.6)).toBe('1m00s');
    expect(formatEta(178)).toBe('2m58s');
    expect(formatEta(179.7)).toBe('3m00s');
    expect(formatEta(3599.6)).toBe('1h00m');
    expect(formatEta(7290)).toBe('2h02m');
    // what cli-progress hands over before it knows a rate
    expect(formatEta('NULL')).toBe('--');
    expect(formatEta('INF')).toBe('--');
    expect(formatEta(Number.NaN)).toBe('--');
    expect(formatEta(Number.POSITIVE_INFINITY)).toBe('--');
  });

  it('never prints a 60 in the seconds or minutes field', () => {
    const bad: string[] = [];
    for (let t = 0; t < 20_000; t += 0.5) if (/(^|[hm])60[sm]/.test(formatEta(t))) bad.push(formatEta(t));
    expect(bad).toEqual([]);
  });
});

describe('plain progress (--no-progress)', () => {
  function capture(now: () => number) {
    const stream = new PassThrough();
    let text = '';
    stream.on('data', (b) => {
      text += String(b);
    });
    const p = createProgress(false, { stream, now });
    return { p, lines: () => text.trim().split('\n') };
  }

  it('prints about 20 lines for 1000 fast steps, the last step included, each with an ETA', () => {
    let t = 0;
    const { p, lines } = capture(() => t);
    p.start(1000, 0, 'sft');
    for (let s = 1; s <= 1000; s++) {
      t += 50; // 50 ms a step: 50 s in all
      p.update(s, { loss: 1 / s });
    }
    const out = lines();
    expect(out.length).toBeGreaterThanOrEqual(20);
    expect(out.length).toBeLessThanOrEqual(26);
    expect(out[0]).toBe('[sft] 0/1000');
    expect(out.at(-1)).toMatch(/^ {2}step 1000\/1000 ETA 0s loss /);
    expect(out[1]).toMatch(/^ {2}step 50\/1000 ETA 48s loss /);
  });

  it('prints every step when steps are slower than 10 s', () => {
    let t = 0;
    const { p, lines } = capture(() => t);
    p.start(200, 0, 'rl');
    for (let s = 1; s <= 5; s++) {
      t += 12_000;
      p.update(s, { reward: 0.5 });
    }
    expect(lines()).toHaveLength(6);
    expect(lines()[1]).toBe('  step 1/200 ETA 39m48s reward 0.500');
  });
});

describe('the progress bar (a terminal)', () => {
  it("shows ETA -- until cli-progress knows a rate, never its 'NF'/'LL'", async () => {
    const stream = Object.assign(new PassThrough(), { isTTY: true, columns: 120 });
    let text = '';
    stream.on('data', (b) => {
      text += String(b);
    });
    const p = createProgress(true, { stream });
    p.start(1000, 0, 'sft');
    p.update(1, { loss: 1 });
    await new Promise((r) => setTimeout(r, 200));
    p.update(2, { loss: 1 });
    p.stop();
    expect(text).toContain('0/1000 | ETA -- |');
    expect(text).toMatch(/2\/1000 \| ETA \d+(m\d\ds|s) \| loss 1/);
    expect(text).not.toMatch(/ETA (NF|LL|NULL|INF)/);
  });
});
