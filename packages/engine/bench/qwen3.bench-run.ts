// pnpm --filter @agentrl/engine bench (alone: npx vitest run --config bench/vitest.config.ts
// bench/qwen3.bench-run.ts; ENGINE_BENCH_QWEN3=0 skips it): the Qwen3-0.6B shape (random weights)
// on the engine beside llama.cpp (the same weights, exported to a qwen3 GGUF; when AGENTRL_LLAMA_CPP
// names a node-llama-cpp install, see llama-cpp.ts) and PyTorch CPU (torch-peer.py on
// /usr/bin/python3, the same shape), in one run, rounds interleaved, medians: decode at batch 1, 8
// and 32 with prefill of their 32-token prompts, and a training step (forward + backward + AdamW on
// 2 x 256 tokens). Achieved GFLOP/s and GB/s of weights are read against the FMA peak (the best of
// the samples taken in each round: a ceiling) and the copy bandwidth (their median). A prefill's
// FLOPs count the lm_head once per prompt, as it is computed. Writes bench-results/engine-qwen3.json.
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { it } from 'vitest';
import { exportGguf } from '../src/export/gguf.js';
import { createModel } from '../src/model.js';
import { engineBinding, setEngineThreads } from '../src/native.js';
import { decodeRun } from './decode-run.js';
import { LLAMA_CPP_SETTINGS, openLlamaCpp } from './llama-cpp.js';
import {
  forwardAttentionFlops,
  forwardMatmulFlopsPerToken,
  prefillMatmulFlopsPerToken,
  QWEN3_0_6B,
  torchPeerConfig,
  weightBytesPerStep,
} from './qwen3-shape.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../../..');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const PYTHON = process.env.AGENTRL_BENCH_PYTHON ?? '/usr/bin/python3';

interface DecodeFig {
  decodeTokensPerS: number;
  decodeCpuMsPerStep: number;
  prefillTokensPerS: number;
}
type Side = 'engine' | 'llama_cpp' | 'pytorch';

/** The PyTorch peer's decode server (torch-peer.py serve), or null with the reason. */
async function openTorch(
  env: NodeJS.ProcessEnv,
): Promise<
  | { ask(req: object): Promise<DecodeFig>; meta: Record<string, unknown>; close(): void }
  | { ask: null; reason: string }
> {
  if (!existsSync(PYTHON)) return { ask: null, reason: `${PYTHON} not found (set AGENTRL_BENCH_PYTHON)` };
  const child: ChildProcessWithoutNullStreams = spawn(PYTHON, [join(here, 'torch-peer.py'), 'serve'], {
    env,
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  let stderr = '';
  child.stderr.on('data', (b) => {
    stderr += String(b);
  });
  const next = async () => {
    const line = await lines.next();
    if (line.done) throw new Error(`torch-peer.py exited: ${stderr.slice(-2000)}`);
    return JSON.parse(line.value) as Record<string, unknown>;
  };
  try {
    const meta = await next();
    return {
      meta,
      ask: async (req) => {
        child.stdin.write(`${JSON.stringify(req)}\n`);
        return (await next()) as unknown as DecodeFig;
      },
      close: () => child.kill(),
    };
  } catch (e) {
    child.kill();
    return { ask: null, reason: (e as Error).message };
  }
}

/** One training process of each side (a fresh ~10 GB state each), as JSON. */
function trainChild(side: 'engine' | 'pytorch', req: object, env: NodeJS.ProcessEnv) {
  const out =
    side === 'engine'
      ? execFileSync(
          process.execPath,
          [
            '--conditions=@agentrl/source',
            '--import',
            'tsx',
            join(here, 'qwen3-train-child.ts'),
            JSON.stringify(req),
          ],
          { cwd: resolve(here, '..'), env, encoding: 'utf8', maxBuffer: 1 << 20 },
        )
      : execFileSync(PYTHON, [join(here, 'torch-peer.py'), 'train', JSON.stringify(req)], {
          env,
          encoding: 'utf8',
          maxBuffer: 1 << 20,
        });
  const last = out.trim().split('\n').at(-1) ?? '{}';
  return JSON.parse(last) as {
    fwd_bwd_s: number[];
    adamw_s: number[];
    anon_huge_gib?: number;
    blas?: string[];
    torch?: string;
  };
}

it('Qwen3-0.6B shape: engine beside llama.cpp and PyTorch CPU', async () => {
  if (process.env.ENGINE_BENCH_QWEN3 === '0') {
    console.log('Qwen3-0.6B shape bench skipped (ENGINE_BENCH_QWEN3=0)');
    return;
  }
  const quick = process.env.ENGINE_BENCH_QUICK === '1';
  const rounds = quick ? 1 : Number(process.env.ENGINE_BENCH_ROUNDS ?? 3);
  // Training rounds cost minutes each (two fresh ~10 GB processes): ENGINE_BENCH_TRAIN_ROUNDS apart.
  const trainRounds = quick ? 1 : Number(process.env.ENGINE_BENCH_TRAIN_ROUNDS ?? rounds);
  const threads = setEngineThreads(2);
  const native = engineBinding() as ReturnType<typeof engineBinding> & {
    peakGflops(iters: number): { gflops: number; threads: number; isa: string };
    copyGBps(mb: number, reps: number): { gbps: number; threads: number };
  };
  const peaks: number[] = [];
  const copies: number[] = [];
  const loads: number[] = [];
  const sample = () => {
    peaks.push(native.peakGflops(1e7).gflops);
    copies.push(native.copyGBps(256, 3).gbps);
    loads.push(loadavg()[0] ?? 0);
  };
  const isa = native.peakGflops(1e6).isa;
  const results: Record<string, unknown> = {};
  // ENGINE_BENCH_QWEN3_CONFIG (JSON, merged over the shape): a smaller model to try the bench itself.
  const override = JSON.parse(process.env.ENGINE_BENCH_QWEN3_CONFIG ?? '{}') as Record<string, unknown>;
  const model = createModel({ ...QWEN3_0_6B, ...override }, { seed: 3, training: false });
  const s = model.shape;
  const flopsPerToken = forwardMatmulFlopsPerToken(s);
  const bytes = weightBytesPerStep(s);
  const torchEnv = {
    ...process.env,
    TORCH_PEER_CONFIG: JSON.stringify(torchPeerConfig(s)),
    TORCH_PEER_THREADS: '2',
  };

  // --- decode and prefill: three sides on the same shape, rounds interleaved ---------------------
  // ENGINE_BENCH_QWEN3_PARTS: `decode`, `train` or both (the default) - to run the phases apart.
  const parts = process.env.ENGINE_BENCH_QWEN3_PARTS ?? 'decode,train';
  const gguf = join(tmpdir(), `agentrl-bench-qwen3-${process.pid}.gguf`);
  if (parts.includes('decode')) exportGguf(model, gguf, { name: 'agentrl-qwen3-0.6b-bench' });
  const peer = parts.includes('decode')
    ? await openLlamaCpp(gguf)
    : { llama: null, reason: 'decode not run', version: '' };
  const torch = parts.includes('decode')
    ? await openTorch(torchEnv)
    : { ask: null, reason: 'decode not run' as string };
  results.llama_cpp = peer.llama
    ? {
        release: peer.version,
        via: 'node-llama-cpp (prebuilt CPU binary)',
        arch: 'qwen3',
        ...LLAMA_CPP_SETTINGS,
      }
    : { not_run: peer.reason };
  results.pytorch = torch.ask ? { ...torch.meta, decoding: 'greedy, KV cache' } : { not_run: torch.reason };
  console.log(`llama.cpp: ${JSON.stringify(results.llama_cpp)}\nPyTorch: ${JSON.stringify(results.pytorch)}`);
  const decode: Record<string, Record<Side, DecodeFig[]>> = {};
  try {
    for (const batch of parts.includes('decode') ? [1, 8, 32] : []) {
      const newTokens = quick ? 2 : batch === 32 ? 8 : 16;
      const runs: Record<Side, DecodeFig[]> = { engine: [], llama_cpp: [], pytorch: [] };
      await decodeRun(model, batch, 1, true); // packs the panel copy once
      await peer.llama?.decode(batch, 1, s.vocab);
      await torch.ask?.({ batch, new: 1 });
      for (let r = 0; r < rounds; r++) {
        sample();
        runs.engine.push(await decodeRun(model, batch, newTokens, true));
        if (peer.llama) runs.llama_cpp.push(await peer.llama.decode(batch, newTokens, s.vocab));
        if (torch.ask) runs.pytorch.push(await torch.ask({ batch, new: newTokens }));
      }
      decode[`batch${batch}`] = runs;
      console.log(
        `batch ${batch}: ${Object.entries(runs)
          .filter(([, xs]) => xs.length > 0)
          .map(
            ([side, xs]) =>
              `${side} decode ${median(xs.map((x) => x.decodeTokensPerS)).toFixed(2)} tokens/s, prefill ${median(xs.map((x) => x.prefillTokensPerS)).toFixed(1)}`,
          )
          .join('; ')}`,
      );
    }
  } finally {
    await peer.llama?.dispose();
    if (torch.ask) torch.close();
    rmSync(gguf, { force: true });
  }

  // --- training: fresh processes per side and round (never both states resident) ---------------
  const seqs = 2;
  const len = quick ? 32 : 256;
  const train: Record<
    'engine' | 'pytorch',
    { fwd_bwd_s: number[]; adamw_s: number[]; anon_huge_gib?: number[] }
  > = {
    engine: { fwd_bwd_s: [], adamw_s: [], anon_huge_gib: [] },
    pytorch: { fwd_bwd_s: [], adamw_s: [] },
  };
  let torchTrainMeta: Record<string, unknown> | undefined;
  const trainReq = { seqs, len, steps: 1, config: override };
  for (let r = 0; r < (parts.includes('train') ? trainRounds : 0); r++) {
    sample();
    for (const side of ['engine', 'pytorch'] as const) {
      if (side === 'pytorch' && !existsSync(PYTHON)) continue;
      try {
        const o = trainChild(side, trainReq, side === 'engine' ? process.env : torchEnv);
        train[side].fwd_bwd_s.push(...o.fwd_bwd_s);
        train[side].adamw_s.push(...o.adamw_s);
        if (typeof o.anon_huge_gib === 'number') train[side].anon_huge_gib?.push(o.anon_huge_gib);
        if (side === 'pytorch') torchTrainMeta = { torch: o.torch, blas: o.blas };
      } catch (e) {
        console.log(`${side} training round failed: ${(e as Error).message.slice(0, 500)}`);
      }
    }
    console.log(`training round ${r + 1}: ${JSON.stringify(train)}`);
  }

  // --- summary -----------------------------------------------------------------------------------
  // The peak is a ceiling: its samples fall when something else runs, so the best one is the peak.
  const peak = Math.max(...peaks);
  const copy = median(copies);
  const table: string[] = [];
  for (const [key, runs] of Object.entries(decode)) {
    const batch = Number(key.slice(5));
    const row: Record<string, unknown> = {};
    for (const [side, xs] of Object.entries(runs) as [Side, DecodeFig[]][]) {
      if (xs.length === 0) continue;
      const tps = median(xs.map((x) => x.decodeTokensPerS));
      const pps = median(xs.map((x) => x.prefillTokensPerS));
      row[side] = {
        decode_tokens_per_s: tps,
        decode_tokens_per_s_runs: xs.map((x) => x.decodeTokensPerS),
        decode_weight_gb_per_s: ((tps / batch) * bytes) / 1e9,
        decode_gflops: (tps * flopsPerToken) / 1e9,
        prefill_tokens_per_s: pps,
        prefill_gflops: (pps * prefillMatmulFlopsPerToken(s, 32)) / 1e9,
      };
    }
    const e = row.engine as { decode_tokens_per_s: number; prefill_tokens_per_s: number } | undefined;
    for (const side of ['llama_cpp', 'pytorch'] as const) {
      const o = row[side] as typeof e;
      if (e && o) {
        row[`engine_vs_${side}`] = {
          decode: e.decode_tokens_per_s / o.decode_tokens_per_s,
          prefill: e.prefill_tokens_per_s / o.prefill_tokens_per_s,
        };
      }
    }
    results[`decode_batch${batch}`] = row;
    const cell = (side: Side, what: 'decode_tokens_per_s' | 'prefill_tokens_per_s') =>
      (row[side] as Record<string, number> | undefined)?.[what]?.toFixed(2) ?? '—';
    const ratio = (side: 'llama_cpp' | 'pytorch', what: 'decode' | 'prefill') =>
      (row[`engine_vs_${side}`] as Record<string, number> | undefined)?.[what]?.toFixed(2) ?? '—';
    const eng = row.engine as { decode_weight_gb_per_s: number; prefill_gflops: number } | undefined;
    table.push(
      `| decode, batch ${batch} (tokens/s) | ${cell('engine', 'decode_tokens_per_s')} | ${cell('llama_cpp', 'decode_tokens_per_s')} | ${cell('pytorch', 'decode_tokens_per_s')} | ${ratio('llama_cpp', 'decode')}x | ${ratio('pytorch', 'decode')}x | ${eng ? `${eng.decode_weight_gb_per_s.toFixed(1)} GB/s of weights (${((100 * eng.decode_weight_gb_per_s) / copy).toFixed(0)}% of copy)` : ''} |`,
      `| prefill, ${batch} x 32 tokens (tokens/s) | ${cell('engine', 'prefill_tokens_per_s')} | ${cell('llama_cpp', 'prefill_tokens_per_s')} | ${cell('pytorch', 'prefill_tokens_per_s')} | ${ratio('llama_cpp', 'prefill')}x | ${ratio('pytorch', 'prefill')}x | ${eng ? `${eng.prefill_gflops.toFixed(1)} GFLOP/s (${((100 * eng.prefill_gflops) / peak).toFixed(0)}% of peak)` : ''} |`,
    );
  }
  const tokens = seqs * len;
  const trainFlops = 3 * (tokens * flopsPerToken + forwardAttentionFlops(s, new Array(seqs).fill(len)));
  const trainFig = (side: 'engine' | 'pytorch') => {
    const fb = median(train[side].fwd_bwd_s);
    const ad = median(train[side].adamw_s);
    return {
      fwd_bwd_s: fb,
      fwd_bwd_s_runs: train[side].fwd_bwd_s,
      ...(train[side].anon_huge_gib ? { anon_huge_gib_runs: train[side].anon_huge_gib } : {}),
      adamw_s: ad,
      tokens_per_s: tokens / fb,
      step_tokens_per_s: tokens / (fb + ad),
      gflops: trainFlops / fb / 1e9,
      fraction_of_peak: trainFlops / fb / 1e9 / peak,
    };
  };
  const te = trainFig('engine');
  const tp = trainFig('pytorch');
  if (parts.includes('train'))
    results.train = {
      tokens,
      flops_per_step: trainFlops,
      engine: te,
      pytorch: { ...tp, ...torchTrainMeta },
      engine_vs_pytorch: {
        fwd_bwd: tp.fwd_bwd_s / te.fwd_bwd_s,
        adamw: tp.adamw_s / te.adamw_s,
        step: (tp.fwd_bwd_s + tp.adamw_s) / (te.fwd_bwd_s + te.adamw_s),
      },
    };
  if (parts.includes('train'))
    table.push(
      `| training fwd+bwd, ${seqs} x ${len} tokens (tokens/s) | ${te.tokens_per_s.toFixed(2)} | — | ${tp.tokens_per_s.toFixed(2)} | — | ${(tp.fwd_bwd_s / te.fwd_bwd_s).toFixed(2)}x | ${te.gflops.toFixed(1)} GFLOP/s (${(100 * te.fraction_of_peak).toFixed(0)}% of peak); PyTorch ${tp.gflops.toFixed(1)} |`,
      `| AdamW update (s) | ${te.adamw_s.toFixed(2)} | — | ${tp.adamw_s.toFixed(2)} | — | ${(tp.adamw_s / te.adamw_s).toFixed(2)}x | 0.6B fp32 weights, moments |`,
    );
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {}
  const summary = {
    shape: 'Qwen3-0.6B (28 x 1024, 16/8 heads x 128, intermediate 3072, vocab 151,936, tied), random weights',
    machine: `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}`,
    commit,
    date: new Date().toISOString(),
    threads,
    isa,
    rounds,
    train_rounds: trainRounds,
    load_average_1m: { samples: loads, median: median(loads) },
    fma_peak_gflops: { max: peak, median: median(peaks), samples: peaks },
    copy_gbps: { median: copy, samples: copies },
    weight_bytes_per_decode_step: bytes,
    forward_matmul_flops_per_token: flopsPerToken,
    ...results,
  };
  const head = [
    `Qwen3-0.6B shape, ${summary.machine}, ${threads} threads, engine kernels ${isa}, commit ${commit}, load average ${median(loads).toFixed(1)} (${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}), FMA peak ${peak.toFixed(1)} GFLOP/s, copy ${copy.toFixed(1)} GB/s, medians of ${rounds} interleaved decode rounds and ${trainRounds} training rounds`,
    '| | engine | llama.cpp | PyTorch | engine / llama.cpp | engine / PyTorch | engine achieved |',
    '|---|---|---|---|---|---|---|',
  ];
  console.log([...head, ...table].join('\n'));
  mkdirSync(resolve(root, 'bench-results'), { recursive: true });
  writeFileSync(
    resolve(root, `bench-results/engine-qwen3${parts === 'decode,train' ? '' : `-${parts}`}.json`),
    `${JSON.stringify({ ...summary, table: [...head, ...table] }, null, 2)}\n`,
  );
});
