/**
 * verify() of this tree and of other source trees of this package (earlier commits, extracted with
 * `git archive <commit> packages/math-verify/src | tar -x -C /tmp/x` and a node_modules link), called
 * interleaved per case in one process, so load from other processes falls on all alike:
 *
 *   VARIANTS=before=/tmp/x/packages/math-verify ROUNDS=21 pnpm exec tsx bench/side-by-side.ts
 *
 * p50/p99 over the per-case medians (as bench/verify.bench.ts), the six slowest cases of each, and
 * agreement with `expected`. Appends one JSON line to <repo root>/bench-results/math-verify-side-by-side.jsonl.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { alternating, median, parseVariants } from '@agentrl/protocol';
import { loadCases, UPSTREAM_OPTIONS } from './cases.js';

type Verify = typeof import('../src/index.js').verify;
const variants: Record<string, Verify> = {};
for (const { name, dir } of parseVariants(process.env.VARIANTS, {
  exists: (d) => existsSync(resolve(d, 'src/index.ts')),
}))
  variants[name] = ((await import(resolve(dir, 'src/index.ts'))) as { verify: Verify }).verify;
variants.this = (await import('../src/index.js')).verify;
const names = Object.keys(variants);
const cases = loadCases();
const ROUNDS = Number(process.env.ROUNDS ?? 21);

for (let i = 0; i < 3; i++)
  for (const c of cases) for (const n of names) variants[n]?.(c.gold, c.pred, UPSTREAM_OPTIONS[c.line]);
const times = Object.fromEntries(names.map((n) => [n, cases.map(() => [] as number[])]));
const agree = Object.fromEntries(names.map((n) => [n, 0]));
for (let r = 0; r < ROUNDS; r++) {
  cases.forEach((c, i) => {
    for (const n of alternating(names, r + 1)) {
      const f = variants[n] as Verify;
      const t0 = performance.now();
      const ok = f(c.gold, c.pred, UPSTREAM_OPTIONS[c.line]).correct;
      times[n]?.[i]?.push(performance.now() - t0);
      if (r === 0 && ok === c.expected) agree[n] = (agree[n] ?? 0) + 1;
    }
  });
}

const at = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
const git = (...args: string[]) => {
  try {
    return execFileSync('git', args, { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
};
const result = {
  commit: `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--', '.').length > 0 ? '+dirty' : ''}`,
  date: new Date().toISOString(),
  machine: `${cpus().length} cores, load ${loadavg()[0]?.toFixed(1)}`,
  rounds: ROUNDS,
  variants: Object.fromEntries(
    names.map((n) => {
      const per = (times[n] ?? []).map(median);
      const sorted = [...per].sort((a, b) => a - b);
      const slowest = per
        .map((m, i) => [m, cases[i]?.line ?? -1] as const)
        .sort((a, b) => b[0] - a[0])
        .slice(0, 6)
        .map(([m, line]) => `${m.toFixed(3)}@${line}`);
      return [
        n,
        {
          p50_ms: +at(sorted, 0.5).toFixed(4),
          p99_ms: +at(sorted, 0.99).toFixed(4),
          agreement: `${agree[n]}/${cases.length}`,
          slowest,
        },
      ];
    }),
  ),
};
for (const [n, v] of Object.entries(result.variants))
  console.log(
    `${n.padEnd(8)} p50 ${v.p50_ms.toFixed(4)} ms  p99 ${v.p99_ms.toFixed(4)} ms  agreement ${v.agreement}  slowest ${v.slowest.join(' ')}`,
  );
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
mkdirSync(resolve(root, 'bench-results'), { recursive: true });
appendFileSync(resolve(root, 'bench-results/math-verify-side-by-side.jsonl'), `${JSON.stringify(result)}\n`);
