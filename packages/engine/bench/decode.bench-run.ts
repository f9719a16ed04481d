// pnpm --filter @agentrl/engine bench (also alone: npx vitest run --config bench/vitest.config.ts
// bench/decode.bench-run.ts): decode and prefill of the 100M Llama-shaped model on 2 threads, with
// batch invariance on and off and llama.cpp on the same weights (exported to GGUF; when
// AGENTRL_LLAMA_CPP names a node-llama-cpp install, see llama-cpp.ts) in the same run, the weight
// bytes read per second against the machine's copy bandwidth, and the sampler over a 151,936-token
// vocabulary before/after.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { it } from 'vitest';
import { exportGguf } from '../src/export/gguf.js';
import { createModel, type Model } from '../src/model.js';
import { engineBinding, setEngineThreads } from '../src/native.js';
import { createRng, sampleToken } from '../src/sampling.js';
import { sampleTokenReference } from '../src/sampling-reference.js';
import { decodeRun, LLAMA_100M } from './decode-run.js';
import { LLAMA_CPP_SETTINGS, type LlamaCppRun, openLlamaCpp } from './llama-cpp.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const now = () => performance.now() / 1000;
type Run = Awaited<ReturnType<typeof decodeRun>>;

/** Bytes of weights one decode step reads: every matrix once, lm_head included (tied: the embedding). */
function weightBytesPerStep(model: Model): number {
  const s = model.shape;
  const perLayer =
    2 * s.hidden * s.heads * s.headDim + 2 * s.hidden * s.kvHeads * s.headDim + 3 * s.hidden * s.intermediate;
  return 4 * (s.layers * perLayer + s.vocab * s.hidden);
}

type Peer = Awaited<ReturnType<typeof openLlamaCpp>>;
type Contender = 'invariant' | 'default' | 'llama_cpp' | 'llama_cpp_1_thread';
type Runs = Record<Contender, Array<Run | LlamaCppRun>>;

/** Rounds of every contender back to back at one batch size (the machine is shared). */
async function decodeRounds(
  model: Model,
  peer: Peer,
  batch: number,
  opts: { rounds: number; newTokens: number; modes: readonly ('invariant' | 'default')[]; copies: number[] },
): Promise<Runs> {
  const native = engineBinding() as ReturnType<typeof engineBinding> & {
    copyGBps(mb: number, reps: number): { gbps: number; threads: number };
  };
  const runs: Runs = { invariant: [], default: [], llama_cpp: [], llama_cpp_1_thread: [] };
  const vocab = model.shape.vocab;
  await decodeRun(model, batch, 2, true); // packs the panel copy once (weights version 0)
  await peer.llama?.decode(batch, 2, vocab);
  await peer.llama?.decode(batch, 2, vocab, 1);
  for (let r = 0; r < opts.rounds; r++) {
    opts.copies.push(native.copyGBps(256, 3).gbps);
    for (const mode of opts.modes)
      runs[mode].push(await decodeRun(model, batch, opts.newTokens, mode === 'invariant'));
    if (peer.llama) {
      runs.llama_cpp.push(await peer.llama.decode(batch, opts.newTokens, vocab));
      // Its best on a loaded machine: one thread never waits at a barrier for a descheduled other.
      runs.llama_cpp_1_thread.push(await peer.llama.decode(batch, opts.newTokens, vocab, 1));
    }
  }
  return runs;
}

interface Figure {
  decode_tokens_per_s: number;
  decode_cpu_ms_per_step: number;
  prefill_tokens_per_s: number;
  weight_gb_per_s: number;
  decode_tokens_per_s_runs: number[];
}

/** Medians of each contender at one batch size, the cost of invariance and the engine / llama.cpp ratios. */
function summarise(batch: number, runs: Runs, bytes: number, results: Record<string, unknown>): void {
  const figs = new Map<Contender, Figure>();
  for (const [mode, xs] of Object.entries(runs) as [Contender, Runs[Contender]][]) {
    if (xs.length === 0) continue;
    const tps = median(xs.map((x) => x.decodeTokensPerS));
    const fig: Figure = {
      decode_tokens_per_s: tps,
      decode_cpu_ms_per_step: median(xs.map((x) => x.decodeCpuMsPerStep)),
      prefill_tokens_per_s: median(xs.map((x) => x.prefillTokensPerS)),
      weight_gb_per_s: ((tps / batch) * bytes) / 1e9,
      decode_tokens_per_s_runs: xs.map((x) => x.decodeTokensPerS),
    };
    figs.set(mode, fig);
    results[`decode_100M_batch${batch}_${mode}`] = fig;
    console.log(
      `100M batch ${batch} ${mode.padEnd(18)}: decode ${tps.toFixed(1)} tokens/s (${fig.weight_gb_per_s.toFixed(1)} GB/s of weights, ${fig.decode_cpu_ms_per_step.toFixed(0)} CPU ms per step), prefill ${fig.prefill_tokens_per_s.toFixed(0)} tokens/s`,
    );
  }
  const inv = figs.get('invariant');
  const def = figs.get('default');
  if (inv && def) {
    console.log(
      `  batch invariance costs ${(100 * (1 - inv.decode_tokens_per_s / def.decode_tokens_per_s)).toFixed(0)}% of decode throughput at batch ${batch} (negative: it is faster)`,
    );
  }
  for (const [mode, label] of [
    ['llama_cpp', 'llama.cpp'],
    ['llama_cpp_1_thread', 'llama.cpp on 1 thread'],
  ] as const) {
    const theirs = figs.get(mode);
    if (!inv || !theirs) continue;
    const ratio = {
      decode: inv.decode_tokens_per_s / theirs.decode_tokens_per_s,
      prefill: inv.prefill_tokens_per_s / theirs.prefill_tokens_per_s,
    };
    results[`engine_vs_${mode}_batch${batch}`] = ratio;
    console.log(
      `  engine (invariant) / ${label} at batch ${batch}: decode ${ratio.decode.toFixed(2)}x, prefill ${ratio.prefill.toFixed(2)}x`,
    );
  }
}

/** The sampler over a Qwen-sized vocabulary: full sort (before) vs kept prefix (after). */
function benchSampling(quick: boolean): Record<string, { reference_ms: number; fast_ms: number }> {
  const V = 151_936;
  const rng = createRng(1);
  const rows = Array.from({ length: quick ? 2 : 6 }, (_, r) =>
    Float32Array.from({ length: V }, () => (r % 2 === 0 ? 0.05 : 4) * (rng() - 0.5) + (rng() < 1e-4 ? 8 : 0)),
  );
  const sampling: Record<string, { reference_ms: number; fast_ms: number }> = {};
  for (const params of [
    { temperature: 1, topK: 0, topP: 0.95 },
    { temperature: 0.7, topK: 50, topP: 1 },
    { temperature: 1, topK: 0, topP: 1 },
  ]) {
    // Reference and fast path alternate on each row (the machine is shared), 3 rounds, medians.
    const times = { reference: [] as number[], fast: [] as number[] };
    for (let round = 0; round < (quick ? 1 : 3); round++) {
      for (const row of rows) {
        for (const [name, f] of [
          ['reference', sampleTokenReference],
          ['fast', sampleToken],
        ] as const) {
          const t0 = now();
          f(row, params, () => 0.5);
          times[name].push(now() - t0);
        }
      }
    }
    const time = (name: 'reference' | 'fast') => 1000 * median(times[name]);
    const key = `T${params.temperature}_k${params.topK}_p${params.topP}`;
    sampling[key] = { reference_ms: time('reference'), fast_ms: time('fast') };
    console.log(
      `sample one token, V = ${V}, ${key}: full sort ${sampling[key].reference_ms.toFixed(1)} ms, kept prefix ${sampling[key].fast_ms.toFixed(1)} ms`,
    );
  }

  return sampling;
}

it('decode benchmark', async () => {
  const quick = process.env.ENGINE_BENCH_QUICK === '1';
  const threads = setEngineThreads(2);
  const load = loadavg()[0] ?? 0;
  const results: Record<string, unknown> = {};

  // --- decode / prefill: engine invariant, engine default, llama.cpp on the same weights ----------
  const model = createModel(LLAMA_100M, { seed: 3, training: false });
  const bytes = weightBytesPerStep(model);
  const gguf = join(tmpdir(), `agentrl-bench-100m-${process.pid}.gguf`);
  exportGguf(model, gguf, { name: 'agentrl-100m-bench' });
  const peer = await openLlamaCpp(gguf);
  if (peer.llama) {
    results.llama_cpp = {
      release: peer.version,
      via: 'node-llama-cpp (prebuilt CPU binary)',
      ...LLAMA_CPP_SETTINGS,
    };
    console.log(`llama.cpp ${peer.version} via node-llama-cpp: ${JSON.stringify(LLAMA_CPP_SETTINGS)}`);
  } else console.log(`llama.cpp: not run (${peer.reason})`);
  const copies: number[] = [];
  const opts = {
    rounds: quick ? 1 : Number(process.env.ENGINE_BENCH_ROUNDS ?? 5),
    newTokens: quick ? 4 : 16,
    // ENGINE_BENCH_DEFAULT=0 leaves out the batch-dependent path (~10x slower here) while iterating.
    modes:
      process.env.ENGINE_BENCH_DEFAULT === '0'
        ? (['invariant'] as const)
        : (['invariant', 'default'] as const),
    copies,
  };
  try {
    for (const batch of [1, 8])
      summarise(batch, await decodeRounds(model, peer, batch, opts), bytes, results);
  } finally {
    await peer.llama?.dispose();
    rmSync(gguf, { force: true });
  }
  const copy = Math.max(...copies);
  console.log(
    `copy bandwidth (read + write, ${threads} threads): best ${copy.toFixed(1)} GB/s, median ${median(copies).toFixed(1)} of ${copies.length}; decode reads ${(bytes / 1e6).toFixed(0)} MB of weights per step`,
  );
  const sampling = benchSampling(quick);

  const summary = {
    machine: `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}`,
    date: new Date().toISOString(),
    load_average_1m_at_start: load,
    load_average_1m_at_end: loadavg()[0] ?? 0,
    threads,
    copy_gbps_best: copy,
    copy_gbps_median: median(copies),
    weight_bytes_per_decode_step: bytes,
    ...results,
    sampling_151936: sampling,
  };
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
  mkdirSync(resolve(root, 'bench-results'), { recursive: true });
  writeFileSync(resolve(root, 'bench-results/engine-decode.json'), `${JSON.stringify(summary, null, 2)}\n`);
});
