/**
 * pnpm --filter @agentrl/executor bench
 *
 * Throughput (closed loop: N calls submitted at once) and latency (open loop: a steady rate at about a
 * third of the pool's capacity) of (a) print(sum(range(1000))), (b) a sympy snippet and (c) a call that
 * computes for about 300 ms (long enough for the per-call memory cap to sample it about 15 times), for the
 * embedded pool, the HTTP server and the Redis path, beside a baseline that starts a fresh python3 per call
 * (the reference's design), measured in the same run. Writes bench-results/executor.json.
 *
 * Other source trees of this package run beside this one in the same run with
 * VARIANTS=name=<a checkout's packages/executor>[,...] (as math-verify's bench/side-by-side.ts;
 * AGENTRL_BENCH_BEFORE=<dir> is short for VARIANTS=before=<dir>): every tree gets its own pool, HTTP
 * server and Redis worker (one redis-server, a key prefix per tree), and each round times every tree's
 * three paths back to back, the trees' order alternating between rounds; the figures are medians over
 * rounds. The per-call memory cap's sampler is also timed on its own (bench/memory-sample.py): CPU time
 * per sample of a call's process tree, for this tree's python/forkserver.py.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { alternating, parseVariants } from '@agentrl/protocol';
import * as thisTree from '../src/index.js';
import { resolvePython } from '../src/sandbox-spec.js';
import { quantile } from '../src/stats.js';
import type { Executor, RunRequest } from '../src/types.js';
import { OwnedRedis } from '../test/redis-server.js';

const SNIPPETS = {
  a: 'print(sum(range(1000)))',
  b: 'import sympy as sp\nx = sp.Symbol("x")\nprint(sp.factor(x**4 - 1), sp.solve(x**2 - 2, x), sp.diff(sp.sin(x) * x, x))',
  /** (c): about 300 ms of computing, so that the per-call memory cap samples it about 15 times. */
  c: 'print(sum(i * i for i in range(3_000_000)))',
};
type Snippet = keyof typeof SNIPPETS;
const QUICK = process.env.AGENTRL_BENCH_QUICK === '1';
const N: Record<Snippet, number> = { a: QUICK ? 100 : 300, b: QUICK ? 20 : 40, c: QUICK ? 8 : 16 };
/** Baseline calls per round (a fresh python3 each): a tenth of N, at least 3. */
const N_BASE: Record<Snippet, number> = { a: Math.round(N.a / 10), b: Math.max(3, N.b / 10), c: 4 };
const ROUNDS = Number(process.env.ROUNDS ?? (QUICK ? 1 : 3));
if (!Number.isInteger(ROUNDS) || ROUNDS < 1)
  throw new Error(`ROUNDS must be a whole number of rounds, 1 or more (got '${process.env.ROUNDS}')`);
const STEADY_S = QUICK ? 2 : 3;
const cores = availableParallelism();
const python = resolvePython('python3').executable;

interface Figures {
  callsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  ok: number;
  n: number;
}

function summarise(latencies: number[], seconds: number, ok: number): Figures {
  const s = [...latencies].sort((x, y) => x - y);
  const r = (v: number) => Math.round(v * 100) / 100;
  return {
    callsPerSec: r(s.length / seconds),
    p50Ms: r(quantile(s, 0.5)),
    p99Ms: r(quantile(s, 0.99)),
    ok,
    n: s.length,
  };
}

function medianFigures(all: Figures[]): Figures {
  const med = (f: (x: Figures) => number) => {
    const v = all.map(f).sort((x, y) => x - y);
    return v[Math.floor(v.length / 2)] as number;
  };
  return {
    callsPerSec: med((x) => x.callsPerSec),
    p50Ms: med((x) => x.p50Ms),
    p99Ms: med((x) => x.p99Ms),
    ok: all.reduce((t, x) => t + x.ok, 0),
    n: all.reduce((t, x) => t + x.n, 0),
  };
}

/** The baseline: a fresh python3 process per call, `cores` at a time. */
function freshPython(code: string): Promise<{ ok: boolean; ms: number }> {
  const t = performance.now();
  return new Promise((res) => {
    execFile(python, ['-c', code], { timeout: 30_000 }, (err, stdout) => {
      res({ ok: !err && stdout.length > 0, ms: performance.now() - t });
    });
  });
}

async function baselineThroughput(code: string, n: number): Promise<Figures> {
  const lat: number[] = [];
  let ok = 0;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: cores }, async () => {
      while (next++ < n) {
        const r = await freshPython(code);
        lat.push(r.ms);
        if (r.ok) ok++;
      }
    }),
  );
  return summarise(lat, (performance.now() - t0) / 1000, ok);
}

async function throughput(ex: Executor, code: string, n: number): Promise<Figures> {
  const reqs: RunRequest[] = Array.from({ length: n }, () => ({ code }));
  const t0 = performance.now();
  const rs = await ex.runBatch(reqs);
  const secs = (performance.now() - t0) / 1000;
  return summarise(
    rs.map((r) => r.latencyMs),
    secs,
    rs.filter((r) => r.status === 'ok').length,
  );
}

/** Open loop: one call every 1000/rate ms for `seconds`, latency of each. */
async function steadyLatency(
  run: (code: string) => Promise<{ ok: boolean; ms: number }>,
  code: string,
  rate: number,
  seconds: number,
): Promise<Figures> {
  const total = Math.max(10, Math.round(rate * seconds));
  const lat: number[] = [];
  let ok = 0;
  const t0 = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    pending.push(
      run(code).then((r) => {
        lat.push(r.ms);
        if (r.ok) ok++;
      }),
    );
  }
  await Promise.all(pending);
  const s = summarise(lat, (performance.now() - t0) / 1000, ok);
  return { ...s, callsPerSec: Math.round(rate * 100) / 100 };
}

const viaExecutor = (ex: Executor) => async (code: string) => {
  const r = await ex.run({ code });
  return { ok: r.status === 'ok', ms: r.latencyMs };
};

const MODES = ['embedded', 'http', 'redis'] as const;
type Mode = (typeof MODES)[number];
/** What the bench needs of a source tree of this package (its src/index.ts). */
type ExecutorModule = Pick<
  typeof thisTree,
  'EmbeddedPool' | 'HttpExecutor' | 'RedisExecutor' | 'serve' | 'startWorker'
>;
interface Tree {
  name: string;
  dir: string;
  modes: Record<Mode, Executor>;
  /** The embedded pool's memory cap (trees from before issue 23 have none). */
  memoryCap: unknown;
  close(): Promise<void>;
}

/** A tree's three modes, ready to run: an embedded pool, an HTTP server, a Redis worker on `redisUrl`. */
async function startTree(name: string, dir: string, mod: ExecutorModule, redisUrl: string): Promise<Tree> {
  const pool = await new mod.EmbeddedPool({}).start();
  const server = await mod.serve({ port: 0, pool: {} });
  const http = new mod.HttpExecutor({ url: server.url, batchSize: 32, lingerMs: 1 });
  const prefix = `bench:${name}:`;
  const worker = await mod.startWorker({ redis: redisUrl, prefix, pool: {} });
  const redis = await new mod.RedisExecutor({
    redis: redisUrl,
    prefix,
    batchSize: 32,
    lingerMs: 1,
  }).connect();
  return {
    name,
    dir,
    modes: { embedded: pool, http, redis },
    memoryCap: (pool as { memoryCap?: unknown }).memoryCap ?? 'none (before the per-call memory cap)',
    async close() {
      await redis.close();
      await worker.stop();
      await http.close();
      await server.close();
      await pool.close();
    },
  };
}

/** The trees to measure: those in VARIANTS (or AGENTRL_BENCH_BEFORE), then this one, named `this`. */
async function startTrees(redisUrl: string): Promise<Tree[]> {
  const before = process.env.AGENTRL_BENCH_BEFORE;
  const spec = process.env.VARIANTS ?? (before ? `before=${before}` : undefined);
  const variants = parseVariants(spec, { exists: (d) => existsSync(resolve(d, 'src/index.ts')) });
  const trees: Tree[] = [];
  for (const { name, dir } of variants) {
    const mod = (await import(resolve(dir, 'src/index.ts'))) as ExecutorModule;
    trees.push(await startTree(name, resolve(dir), mod, redisUrl));
  }
  trees.push(
    await startTree('this', resolve(fileURLToPath(new URL('..', import.meta.url))), thisTree, redisUrl),
  );
  return trees;
}

type PerTree = Record<string, Record<Mode, Figures>>;
const line = (k: string, f: Figures, extra = '') =>
  console.log(
    `${k.padEnd(36)} ${String(f.callsPerSec).padStart(8)} calls/s  p50 ${String(f.p50Ms).padStart(8)} ms  p99 ${String(f.p99Ms).padStart(8)} ms  ok ${f.ok}/${f.n}${extra}`,
  );

/**
 * Runs `measure` on every tree's every mode for ROUNDS rounds: each round every tree's three modes back
 * to back, the trees' order alternating between rounds. Medians over rounds, per tree and mode.
 */
async function interleaved(
  trees: Tree[],
  measure: (ex: Executor) => Promise<Figures>,
  beforeEachRound?: () => Promise<void>,
): Promise<PerTree> {
  const rounds: Record<string, Record<Mode, Figures[]>> = {};
  for (const t of trees) rounds[t.name] = { embedded: [], http: [], redis: [] };
  for (let round = 0; round < ROUNDS; round++) {
    await beforeEachRound?.();
    for (const t of alternating(trees, round))
      for (const mode of MODES) rounds[t.name]?.[mode].push(await measure(t.modes[mode]));
  }
  const out: PerTree = {};
  for (const t of trees) {
    const r = rounds[t.name] as Record<Mode, Figures[]>;
    out[t.name] = {
      embedded: medianFigures(r.embedded),
      http: medianFigures(r.http),
      redis: medianFigures(r.redis),
    };
  }
  return out;
}

/** Closed-loop throughput of each snippet; the fresh-python3 baseline runs at the start of each round. */
async function measureThroughput(trees: Tree[], results: Record<string, unknown>): Promise<void> {
  const baseline: Record<string, Figures> = {};
  const throughputs: Record<string, PerTree> = {};
  for (const key of Object.keys(SNIPPETS) as Snippet[]) {
    const code = SNIPPETS[key];
    const base: Figures[] = [];
    const per = await interleaved(
      trees,
      (ex) => throughput(ex, code, N[key]),
      async () => {
        base.push(await baselineThroughput(code, N_BASE[key]));
      },
    );
    const b = medianFigures(base);
    baseline[key] = b;
    throughputs[key] = per;
    line(`${key} baseline fresh python3`, b);
    for (const t of trees)
      for (const mode of MODES) {
        const f = per[t.name]?.[mode] as Figures;
        line(`${key} ${mode} ${t.name}`, f, ` (${(f.callsPerSec / b.callsPerSec).toFixed(1)}x baseline)`);
      }
  }
  results.baseline = baseline;
  results.throughput = throughputs;
}

/**
 * Latency of (a) at a sustained load: every tree's every path at the same steady rate, a third of the
 * slowest tree's embedded capacity; medians over rounds. Also what the remote paths add to the p50.
 */
async function measureSteady(trees: Tree[], results: Record<string, unknown>): Promise<void> {
  const tp = (results.throughput as Record<Snippet, PerTree>).a;
  const capacity = Math.min(...trees.map((t) => (tp[t.name] as Record<Mode, Figures>).embedded.callsPerSec));
  const rate = Math.max(5, Math.round(capacity / 3));
  const base = (results.baseline as Record<Snippet, Figures>).a;
  const baseRate = Math.max(1, Math.round(base.callsPerSec / 2));
  const baseSteady = await steadyLatency(freshPython, SNIPPETS.a, baseRate, STEADY_S);
  line(`a steady baseline @${baseRate}/s`, baseSteady);
  const per = await interleaved(trees, (ex) => steadyLatency(viaExecutor(ex), SNIPPETS.a, rate, STEADY_S));
  const added: Record<string, { http: number; redis: number }> = {};
  for (const t of trees) {
    const s = per[t.name] as Record<Mode, Figures>;
    for (const mode of MODES) line(`a steady ${mode} ${t.name} @${rate}/s`, s[mode]);
    added[t.name] = {
      http: Math.round((s.http.p50Ms - s.embedded.p50Ms) * 100) / 100,
      redis: Math.round((s.redis.p50Ms - s.embedded.p50Ms) * 100) / 100,
    };
    console.log(
      `added p50 latency per call (${t.name}): http ${added[t.name]?.http} ms, redis ${added[t.name]?.redis} ms`,
    );
  }
  results.steady = { rate, baselineRate: baseRate, baseline: baseSteady, ...per };
  results.addedLatencyMs = added;
}

/**
 * The per-call memory cap's own cost: bench/memory-sample.py times forkserver.py's memory_held() (what
 * the sampler runs for each call every 20 ms) on a process tree like a call's; the CPU it takes per
 * second of a running call follows.
 */
function measureMemorySampler(results: Record<string, unknown>): void {
  const script = fileURLToPath(new URL('./memory-sample.py', import.meta.url));
  const pyDir = fileURLToPath(new URL('../python', import.meta.url));
  const out = execFileSync(python, [script, pyDir, QUICK ? '500' : '5000'], { encoding: 'utf8' });
  const r = JSON.parse(out) as Record<string, number>;
  console.log(
    `memory cap sampler: ${r.cpuUsPerSample} us CPU per sample of a ${r.processes}-process call, every ${r.intervalMs} ms = ${r.cpuPercentPerRunningCall} % of a core per running call`,
  );
  results.memorySampler = r;
}

function writeResults(results: Record<string, unknown>): void {
  const out = {
    package: '@agentrl/executor',
    commit: gitCommit(),
    date: new Date().toISOString(),
    machine: {
      cores,
      cpu: cpus()[0]?.model,
      memGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
    },
    quick: QUICK,
    loadAverage: loadavg().map((x) => Math.round(x * 10) / 10),
    rounds: ROUNDS,
    snippets: SNIPPETS,
    n: N,
    results,
  };
  const dir = resolve(fileURLToPath(new URL('../../../bench-results', import.meta.url)));
  mkdirSync(dir, { recursive: true });
  writeFileSync(resolve(dir, 'executor.json'), `${JSON.stringify(out, null, 2)}\n`);
  console.log(`wrote ${resolve(dir, 'executor.json')}`);
}

async function main() {
  const results: Record<string, unknown> = {
    loadAverageAtStart: loadavg().map((x) => Math.round(x * 10) / 10),
  };
  const redisServer = await OwnedRedis.start();
  const trees = await startTrees(redisServer.url);
  try {
    results.trees = Object.fromEntries(trees.map((t) => [t.name, { dir: t.dir, memoryCap: t.memoryCap }]));
    for (const t of trees) for (const mode of MODES) await throughput(t.modes[mode], SNIPPETS.a, 20); // warm up
    await measureThroughput(trees, results);
    await measureSteady(trees, results);
  } finally {
    for (const t of trees) await t.close();
    await redisServer.stop();
  }
  measureMemorySampler(results);
  writeResults(results);
}

function gitCommit(): string | undefined {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}

await main();
