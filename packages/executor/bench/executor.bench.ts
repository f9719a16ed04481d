/**
 * pnpm --filter @agentrl/executor bench
 *
 * Throughput (closed loop: N calls submitted at once) and latency (open loop: a steady rate at about half
 * the baseline-free capacity) of (a) print(sum(range(1000))) and (b) a sympy snippet, for the embedded pool,
 * the HTTP server and the Redis path, each beside a baseline that starts a fresh python3 per call (the
 * reference's design), measured in the same run. Writes bench-results/executor.json.
 *
 * With AGENTRL_BENCH_BEFORE=<a checkout of packages/executor> it also runs that version's embedded pool
 * beside this one, in alternating rounds of the same run, on (a), (b) and (c) a call that computes for about
 * 300 ms (long enough for the per-call memory cap to measure it many times): `beforeAfter` in the JSON.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EmbeddedPool } from '../src/embedded-pool.js';
import { HttpExecutor } from '../src/http-client.js';
import { RedisExecutor } from '../src/redis-client.js';
import { startWorker } from '../src/redis-worker.js';
import { resolvePython } from '../src/sandbox-spec.js';
import { serve } from '../src/serve.js';
import { quantile } from '../src/stats.js';
import type { Executor, RunRequest } from '../src/types.js';
import { OwnedRedis } from '../test/redis-server.js';

const SNIPPETS = {
  a: 'print(sum(range(1000)))',
  b: 'import sympy as sp\nx = sp.Symbol("x")\nprint(sp.factor(x**4 - 1), sp.solve(x**2 - 2, x), sp.diff(sp.sin(x) * x, x))',
};
const QUICK = process.env.AGENTRL_BENCH_QUICK === '1';
const BEFORE = process.env.AGENTRL_BENCH_BEFORE;
/** (c): about 300 ms of computing, so that the per-call memory cap samples it about 15 times. */
const LONG = 'print(sum(i * i for i in range(3_000_000)))';
const N = { a: QUICK ? 100 : 300, b: QUICK ? 20 : 40 };
const ROUNDS = QUICK ? 1 : 3;
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

type Log = (k: string, f: Figures, base?: Figures) => void;
type Modes = [string, Executor][];

/** The three modes, each ready to run: an embedded pool, an HTTP server, a Redis with one worker. */
async function startModes(): Promise<{ modes: Modes; close(): Promise<void> }> {
  const pool = await new EmbeddedPool({}).start();
  const server = await serve({ port: 0, pool: {} });
  const http = new HttpExecutor({ url: server.url, batchSize: 32, lingerMs: 1 });
  const redisServer = await OwnedRedis.start();
  const worker = await startWorker({ redis: redisServer.url, prefix: 'bench:', pool: {} });
  const redis = await new RedisExecutor({
    redis: redisServer.url,
    prefix: 'bench:',
    batchSize: 32,
    lingerMs: 1,
  }).connect();
  const modes: Modes = [
    ['embedded', pool],
    ['http', http],
    ['redis', redis],
  ];
  return {
    modes,
    async close() {
      await redis.close();
      await worker.stop();
      await redisServer.stop();
      await http.close();
      await server.close();
      await pool.close();
    },
  };
}

/**
 * Closed-loop throughput of both snippets. The machine is shared: each round measures the baseline and
 * every mode back to back, and the figures quoted are the medians over rounds.
 */
async function measureThroughput(modes: Modes, log: Log): Promise<void> {
  for (const key of ['a', 'b'] as const) {
    const code = SNIPPETS[key];
    const rounds: Record<string, Figures[]> = Object.fromEntries(
      ['baseline', ...modes.map(([n]) => n)].map((n) => [n, [] as Figures[]]),
    );
    for (let round = 0; round < ROUNDS; round++) {
      const base = await baselineThroughput(
        code,
        key === 'a' ? Math.round(N.a / 10) : Math.max(3, Math.round(N.b / 10)),
      );
      rounds.baseline?.push(base);
      for (const [name, ex] of modes) rounds[name]?.push(await throughput(ex, code, N[key]));
    }
    const base = medianFigures(rounds.baseline as Figures[]);
    log(`${key} baseline fresh python3`, base);
    for (const [name] of modes)
      log(`${key} ${name} throughput`, medianFigures(rounds[name] as Figures[]), base);
  }
}

/**
 * Latency at a sustained load: the same steady rate for every path, about a third of the pool's
 * capacity; rounds of [embedded, http, redis] back to back, medians over rounds. Adds the latency the
 * remote paths add per call to `results`.
 */
async function measureSteady(modes: Modes, results: Record<string, unknown>, log: Log): Promise<void> {
  const capacity = (results['a embedded throughput'] as Figures).callsPerSec;
  const rate = Math.max(5, Math.round(capacity / 3));
  const baseRate = Math.max(1, Math.round((results['a baseline fresh python3'] as Figures).callsPerSec / 2));
  const seconds = QUICK ? 2 : 3;
  log(`a steady baseline @${baseRate}/s`, await steadyLatency(freshPython, SNIPPETS.a, baseRate, seconds));
  const steadyRounds: Record<string, Figures[]> = Object.fromEntries(
    modes.map(([n]) => [n, [] as Figures[]]),
  );
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, ex] of modes) {
      steadyRounds[name]?.push(await steadyLatency(viaExecutor(ex), SNIPPETS.a, rate, seconds));
    }
  }
  const steady: Record<string, Figures> = {};
  for (const [name] of modes) {
    steady[name] = medianFigures(steadyRounds[name] as Figures[]);
    log(`a steady ${name} @${rate}/s`, steady[name] as Figures);
  }
  const added = (steady.redis as Figures).p50Ms - (steady.embedded as Figures).p50Ms;
  const addedHttp = (steady.http as Figures).p50Ms - (steady.embedded as Figures).p50Ms;
  console.log(
    `added p50 latency per call at ${rate}/s: redis ${added.toFixed(2)} ms, http ${addedHttp.toFixed(2)} ms`,
  );
  results.addedLatencyMs = {
    redis: Math.round(added * 100) / 100,
    http: Math.round(addedHttp * 100) / 100,
    rate,
  };
}

/**
 * This version's embedded pool beside the one in `beforeDir` (default options both), rounds alternating
 * which goes first; medians over rounds.
 */
async function measureBeforeAfter(beforeDir: string, results: Record<string, unknown>): Promise<void> {
  const mod = (await import(resolve(beforeDir, 'src/embedded-pool.ts'))) as {
    EmbeddedPool: typeof EmbeddedPool;
  };
  const pools: [string, Executor][] = [
    ['before', await new mod.EmbeddedPool({}).start()],
    ['after', await new EmbeddedPool({}).start()],
  ];
  const out: Record<string, Record<string, Figures>> = {};
  try {
    for (const [, ex] of pools) await throughput(ex, SNIPPETS.a, 20);
    for (const [key, code, n] of [
      ['a', SNIPPETS.a, N.a],
      ['b', SNIPPETS.b, N.b],
      ['c', LONG, QUICK ? 8 : 16],
    ] as const) {
      const rounds: Record<string, Figures[]> = { before: [], after: [] };
      for (let round = 0; round < Math.max(3, ROUNDS); round++) {
        const order = round % 2 === 0 ? pools : [...pools].reverse();
        for (const [name, ex] of order) rounds[name]?.push(await throughput(ex, code, n));
      }
      out[key] = {};
      for (const [name] of pools) {
        const f = medianFigures(rounds[name] as Figures[]);
        (out[key] as Record<string, Figures>)[name] = f;
        console.log(
          `${`${key} embedded ${name}`.padEnd(34)} ${String(f.callsPerSec).padStart(8)} calls/s  p50 ${String(f.p50Ms).padStart(8)} ms  p99 ${String(f.p99Ms).padStart(8)} ms  ok ${f.ok}/${f.n}`,
        );
      }
    }
    const a = out.a as Record<string, Figures>;
    out.steady = await steadyBeforeAfter(pools, (a.before as Figures).callsPerSec);
  } finally {
    for (const [, ex] of pools) await ex.close();
  }
  results.beforeAfter = { before: beforeDir, ...out };
}

/** Per-call latency of (a) at a third of the before pool's capacity, rounds alternating; medians. */
async function steadyBeforeAfter(
  pools: [string, Executor][],
  capacity: number,
): Promise<Record<string, Figures>> {
  const rate = Math.max(5, Math.round(capacity / 3));
  const rounds: Record<string, Figures[]> = { before: [], after: [] };
  for (let round = 0; round < Math.max(3, ROUNDS); round++) {
    const order = round % 2 === 0 ? pools : [...pools].reverse();
    for (const [name, ex] of order)
      rounds[name]?.push(await steadyLatency(viaExecutor(ex), SNIPPETS.a, rate, QUICK ? 2 : 3));
  }
  const out: Record<string, Figures> = {};
  for (const [name] of pools) {
    const f = medianFigures(rounds[name] as Figures[]);
    out[name] = f;
    console.log(
      `${`a steady embedded ${name} @${rate}/s`.padEnd(34)} ${String(f.callsPerSec).padStart(8)} calls/s  p50 ${String(f.p50Ms).padStart(8)} ms  p99 ${String(f.p99Ms).padStart(8)} ms  ok ${f.ok}/${f.n}`,
    );
  }
  return out;
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
    results,
  };
  const dir = resolve(fileURLToPath(new URL('../../../bench-results', import.meta.url)));
  mkdirSync(dir, { recursive: true });
  writeFileSync(resolve(dir, 'executor.json'), `${JSON.stringify(out, null, 2)}\n`);
  console.log(`wrote ${resolve(dir, 'executor.json')}`);
}

async function main() {
  const results: Record<string, unknown> = {};
  const log: Log = (k, f, base) => {
    const ratio = base ? ` (${(f.callsPerSec / base.callsPerSec).toFixed(1)}x baseline)` : '';
    console.log(
      `${k.padEnd(34)} ${String(f.callsPerSec).padStart(8)} calls/s  p50 ${String(f.p50Ms).padStart(8)} ms  p99 ${String(f.p99Ms).padStart(8)} ms  ok ${f.ok}/${f.n}${ratio}`,
    );
    results[k] = base
      ? { ...f, speedupVsBaseline: Math.round((f.callsPerSec / base.callsPerSec) * 10) / 10 }
      : f;
  };
  if (BEFORE) await measureBeforeAfter(BEFORE, results);
  const { modes, close } = await startModes();
  try {
    for (const [, ex] of modes) await throughput(ex, SNIPPETS.a, 20); // warm connections and caches
    await measureThroughput(modes, log);
    await measureSteady(modes, results, log);
  } finally {
    await close();
  }
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
