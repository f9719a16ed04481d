// pnpm --filter @agentrl/engine bench (also alone: npx vitest run --config bench/vitest.config.ts
// bench/decode.bench-run.ts): decode and prefill of the 100M Llama-shaped model on 2 threads, with
// batch invariance on and off in the same run, the weight bytes read per second against the
// machine's copy bandwidth, and the sampler over a 151,936-token vocabulary before/after.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { it } from 'vitest';
import { createModel, type Model } from '../src/model.js';
import { engineBinding, setEngineThreads } from '../src/native.js';
import { createRng, sampleToken } from '../src/sampling.js';
import { sampleTokenReference } from '../src/sampling-reference.js';
import { decodeRun, LLAMA_100M } from './decode-run.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const now = () => performance.now() / 1000;

/** Bytes of weights one decode step reads: every matrix once, lm_head included (tied: the embedding). */
function weightBytesPerStep(model: Model): number {
  const s = model.shape;
  const perLayer =
    2 * s.hidden * s.heads * s.headDim + 2 * s.hidden * s.kvHeads * s.headDim + 3 * s.hidden * s.intermediate;
  return 4 * (s.layers * perLayer + s.vocab * s.hidden);
}

/**
 * llama.cpp beside the engine when AGENTRL_LLAMA_CPP names llama-bench and AGENTRL_LLAMA_GGUF an
 * fp32 GGUF of the same 100M shape: its batch-1 decode (tg) and prefill (pp) tokens/s on 2 threads
 * with an fp32 KV cache, from `llama-bench -o json` (fields n_prompt, n_gen, avg_ts).
 */
function llamaCpp(newTokens: number): { decode_tokens_per_s: number; prefill_tokens_per_s: number } | null {
  const bin = process.env.AGENTRL_LLAMA_CPP;
  const gguf = process.env.AGENTRL_LLAMA_GGUF;
  if (!bin || !gguf) return null;
  const args = [
    '-m',
    gguf,
    '-t',
    '2',
    '-p',
    '32',
    '-n',
    String(newTokens),
    '-ctk',
    'f32',
    '-ctv',
    'f32',
    '-r',
    '3',
    '-o',
    'json',
  ];
  const r = spawnSync(bin, args, { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0)
    throw new Error(`llama-bench ${args.join(' ')} failed (${r.status}): ${r.stderr.slice(-500)}`);
  const rows = JSON.parse(r.stdout) as Array<{ n_prompt: number; n_gen: number; avg_ts: number }>;
  const tg = rows.find((x) => x.n_gen > 0 && x.n_prompt === 0);
  const pp = rows.find((x) => x.n_prompt > 0 && x.n_gen === 0);
  return { decode_tokens_per_s: tg?.avg_ts ?? Number.NaN, prefill_tokens_per_s: pp?.avg_ts ?? Number.NaN };
}

it('decode benchmark', async () => {
  const quick = process.env.ENGINE_BENCH_QUICK === '1';
  const native = engineBinding() as ReturnType<typeof engineBinding> & {
    copyGBps(mb: number, reps: number): { gbps: number; threads: number };
  };
  const threads = setEngineThreads(2);
  const load = loadavg()[0] ?? 0;
  const results: Record<string, unknown> = {};

  // --- decode / prefill, invariant vs default, interleaved rounds (the machine is shared) ---------
  const model = createModel(LLAMA_100M, { seed: 3 });
  const bytes = weightBytesPerStep(model);
  const copies: number[] = [];
  const rounds = quick ? 1 : 3;
  const newTokens = quick ? 4 : 16;
  for (const batch of [1, 8]) {
    const runs: Record<'invariant' | 'default', Array<Awaited<ReturnType<typeof decodeRun>>>> = {
      invariant: [],
      default: [],
    };
    await decodeRun(model, batch, 2, true); // packs the panel copy once (weights version 0)
    for (let r = 0; r < rounds; r++) {
      copies.push(native.copyGBps(256, 3).gbps);
      runs.invariant.push(await decodeRun(model, batch, newTokens, true));
      runs.default.push(await decodeRun(model, batch, newTokens, false));
    }
    for (const mode of ['invariant', 'default'] as const) {
      const tps = median(runs[mode].map((x) => x.decodeTokensPerS));
      const pre = median(runs[mode].map((x) => x.prefillTokensPerS));
      const gbps = ((tps / batch) * bytes) / 1e9;
      results[`decode_100M_batch${batch}_${mode}`] = {
        decode_tokens_per_s: tps,
        prefill_tokens_per_s: pre,
        weight_gb_per_s: gbps,
      };
      console.log(
        `100M batch ${batch} ${mode.padEnd(9)}: decode ${tps.toFixed(1)} tokens/s (${gbps.toFixed(1)} GB/s of weights), prefill ${pre.toFixed(0)} tokens/s`,
      );
    }
    const inv = results[`decode_100M_batch${batch}_invariant`] as { decode_tokens_per_s: number };
    const def = results[`decode_100M_batch${batch}_default`] as { decode_tokens_per_s: number };
    console.log(
      `  batch invariance costs ${(100 * (1 - inv.decode_tokens_per_s / def.decode_tokens_per_s)).toFixed(0)}% of decode throughput at batch ${batch} (negative: it is faster)`,
    );
  }
  const llama = llamaCpp(newTokens);
  if (llama) {
    results.llama_cpp_100M_batch1 = llama;
    const ours = results.decode_100M_batch1_invariant as { decode_tokens_per_s: number };
    console.log(
      `llama.cpp batch 1: decode ${llama.decode_tokens_per_s.toFixed(1)} tokens/s (engine, invariant: ${(ours.decode_tokens_per_s / llama.decode_tokens_per_s).toFixed(2)}x), prefill ${llama.prefill_tokens_per_s.toFixed(0)} tokens/s`,
    );
  } else {
    console.log(
      'llama.cpp: not run (set AGENTRL_LLAMA_CPP=path/to/llama-bench and AGENTRL_LLAMA_GGUF=an fp32 GGUF of this shape)',
    );
  }
  const copy = Math.max(...copies);
  console.log(
    `copy bandwidth (read + write, ${threads} threads): best ${copy.toFixed(1)} GB/s, median ${median(copies).toFixed(1)} of ${copies.length}; decode reads ${(bytes / 1e6).toFixed(0)} MB of weights per step`,
  );

  // --- the sampler over a Qwen-sized vocabulary: full sort (before) vs kept prefix (after) ------------
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

  const summary = {
    machine: `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}`,
    date: new Date().toISOString(),
    load_average_1m_at_start: load,
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
