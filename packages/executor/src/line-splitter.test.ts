import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineSplitter } from './line-splitter.js';

function split(chunks: string[]): string[] {
  const out: string[] = [];
  const s = new LineSplitter((l) => out.push(l));
  for (const c of chunks) s.push(c);
  return out;
}

describe('LineSplitter', () => {
  it('yields the same lines however the text is chunked', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 20 })), fc.array(fc.nat({ max: 30 })), (lines, cuts) => {
        const text = lines.map((l) => `${l.replaceAll('\n', ' ')}\n`).join('');
        const chunks: string[] = [];
        let at = 0;
        for (const c of cuts) {
          chunks.push(text.slice(at, at + c));
          at += c;
        }
        chunks.push(text.slice(at));
        expect(split(chunks)).toEqual(lines.map((l) => l.replaceAll('\n', ' ')));
      }),
    );
  });

  it('joins a 64 MiB line of 64 KiB chunks in linear time', () => {
    const chunk = 'x'.repeat(64 * 1024);
    const t0 = performance.now();
    const out: string[] = [];
    const s = new LineSplitter((l) => out.push(l));
    for (let i = 0; i < 1024; i++) s.push(chunk);
    s.push('\n');
    expect(out[0]?.length).toBe(64 * 1024 * 1024);
    expect(performance.now() - t0).toBeLessThan(2000); // a quadratic search took minutes here
  });
});
