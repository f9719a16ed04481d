/**
 * p50/p99 of one verify call on the 254 Math-Verify cases, measured side by side (interleaved per
 * case, same process) with two baselines:
 *  - string: our extraction, then equality of the normalised strings (the cheapest possible reward)
 *  - compute-engine: our extraction, then @cortex-js/compute-engine parse + isEqual (a CAS alone)
 * Writes the headline figures to <repo root>/bench-results/math-verify.json.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { goldAnswer } from '../src/answer.js';
import { Deadline } from '../src/deadline.js';
import { extractAnswer, verify } from '../src/index.js';
import { canonicalString } from '../src/latex/normalize.js';
import { loadCases, UPSTREAM_OPTIONS } from './cases.js';

interface Engine {
  parse(s: string): { isEqual(o: unknown): boolean | undefined; isSame(o: unknown): boolean };
}
const ce = new (
  createRequire(import.meta.url)('@cortex-js/compute-engine') as { ComputeEngine: new () => Engine }
).ComputeEngine();

const cases = loadCases();
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);

function goldRaw(gold: string): string {
  return goldAnswer(gold, new Deadline(1_000), true)?.raw ?? gold;
}

// each row with the options Math-Verify's own test ran it with (UPSTREAM_OPTIONS, see cases.ts)
const methods: Record<string, (gold: string, pred: string, line: number) => boolean> = {
  'math-verify': (g, p, line) => verify(g, p, UPSTREAM_OPTIONS[line]).correct,
  string: (g, p) => {
    const a = extractAnswer(p);
    return a !== null && canonicalString(goldRaw(g)) === canonicalString(a);
  },
  'compute-engine': (g, p) => {
    const a = extractAnswer(p);
    if (a === null) return false;
    try {
      const x = ce.parse(goldRaw(g));
      const y = ce.parse(a);
      return x.isSame(y) || x.isEqual(y) === true;
    } catch {
      return false;
    }
  },
};
const names = Object.keys(methods);

// warm-up: JIT and the CAS's first-parse cost are not what the trainer pays per call
for (let i = 0; i < 3; i++)
  for (const c of cases) for (const n of names) methods[n]?.(c.gold, c.pred, c.line);

const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
const agree: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
for (let r = 0; r < ROUNDS; r++) {
  for (const c of cases) {
    for (const n of names) {
      const t0 = performance.now();
      const ok = (methods[n] as (g: string, p: string, line: number) => boolean)(c.gold, c.pred, c.line);
      (samples[n] as number[]).push(performance.now() - t0);
      if (r === 0 && ok === c.expected) agree[n] = (agree[n] ?? 0) + 1;
    }
  }
}

const pct = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
};
/** Per case, the median over rounds (the machine is shared: a GC pause or a neighbour's build is not the verifier). */
const perCaseMedians = (xs: number[]) =>
  cases.map((_, i) =>
    pct(
      Array.from({ length: ROUNDS }, (_, r) => xs[r * cases.length + i] as number),
      0.5,
    ),
  );
const stats = Object.fromEntries(
  names.map((n) => {
    const xs = samples[n] as number[];
    const med = perCaseMedians(xs);
    return [
      n,
      {
        p50_ms: +pct(med, 0.5).toFixed(4),
        p99_ms: +pct(med, 0.99).toFixed(4),
        max_ms: +Math.max(...med).toFixed(3),
        raw_p50_ms: +pct(xs, 0.5).toFixed(4),
        raw_p99_ms: +pct(xs, 0.99).toFixed(4),
        agreement: +((agree[n] ?? 0) / cases.length).toFixed(4),
      },
    ];
  }),
);
const subject = stats['math-verify'] as { p50_ms: number; p99_ms: number };
/** The commit measured, with `+dirty` when the work tree differs from it (figures in docs quote this). */
function commitOf(): string {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8' }).trim();
    return `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--', '.').length > 0 ? '+dirty' : ''}`;
  } catch {
    return 'unknown';
  }
}

const result = {
  package: '@agentrl/math-verify',
  commit: commitOf(),
  date: new Date().toISOString(),
  machine: `${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
  cases: cases.length,
  calls_per_method: cases.length * ROUNDS,
  methods: stats,
  ratios: Object.fromEntries(
    names
      .filter((n) => n !== 'math-verify')
      .map((n) => {
        const b = stats[n] as { p50_ms: number; p99_ms: number };
        return [
          `math-verify / ${n}`,
          { p50: +(subject.p50_ms / b.p50_ms).toFixed(2), p99: +(subject.p99_ms / b.p99_ms).toFixed(2) },
        ];
      }),
  ),
  goal_p99_under_5ms: subject.p99_ms < 5,
};

console.log(
  `math-verify bench: ${cases.length} cases × ${ROUNDS} rounds, interleaved; p50/p99 over the per-case medians`,
);
for (const n of names) {
  const s = stats[n] as {
    p50_ms: number;
    p99_ms: number;
    max_ms: number;
    raw_p99_ms: number;
    agreement: number;
  };
  console.log(
    `  ${n.padEnd(15)} p50 ${s.p50_ms.toFixed(3)} ms  p99 ${s.p99_ms.toFixed(3)} ms  max ${s.max_ms.toFixed(2)} ms  (raw p99 over all calls ${s.raw_p99_ms.toFixed(2)} ms)  agreement ${(100 * s.agreement).toFixed(1)}%`,
  );
}
for (const [k, v] of Object.entries(result.ratios)) console.log(`  ${k}: p50 ×${v.p50}, p99 ×${v.p99}`);
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
mkdirSync(resolve(root, 'bench-results'), { recursive: true });
writeFileSync(resolve(root, 'bench-results/math-verify.json'), `${JSON.stringify(result, null, 2)}\n`);
console.log(`wrote ${resolve(root, 'bench-results/math-verify.json')}`);
