// Before/after timings of single hot spots (not part of `pnpm bench`): run with
//   node --conditions=@agentrl/source --import tsx bench/hotspots-run.ts attention|ce|decode|panel|gemm
// (A/B of two builds: AGENTRL_NATIVE_PATH loads the other one's addon.)
import { loadavg } from 'node:os';
import { packSequences } from '../src/batch.js';
import { createModel } from '../src/model.js';
import { type ProductEntries, productEntries, setEngineThreads } from '../src/native.js';
import { decodeRun } from './decode-run.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const base = {
  architectures: ['Qwen3ForCausalLM'],
  hidden_size: 1024,
  intermediate_size: 3072,
  num_attention_heads: 16,
  num_key_value_heads: 8,
  head_dim: 128,
  tie_word_embeddings: true,
  max_position_embeddings: 4096,
};
// THREADS=1 with the CPU-time figures reads a hot spot's cost even on a loaded machine.
setEngineThreads(Number(process.env.THREADS ?? 2));
const what = process.argv[2];
const rounds = Number(process.env.ROUNDS ?? 5);
const load0 = loadavg()[0];
if (what === 'panel') {
  // Decode's products (PanelGemm on the panel copy) at the 0.6B widths, batch 1..32 rows: CPU ms
  // per product, medians over rounds. The smaller weights stay in L3 between repeats (the decode
  // step streams them from memory), so read `decode` for the step itself.
  const native = productEntries();
  const rows = (process.env.ROWS ?? '1,4,8,16,32').split(',').map(Number);
  const widths = [
    { name: 'q/o 1024x1024', n: 1024, k: 1024 },
    { name: 'gate/up 1024->3072', n: 3072, k: 1024 },
    { name: 'down 3072->1024', n: 1024, k: 3072 },
    { name: 'lm_head 1024->151936', n: 151_936, k: 1024 },
  ].map((s) => {
    const w = Float32Array.from({ length: s.n * s.k }, (_, i) => ((i * 7919) % 1000) / 1000 - 0.5);
    const panels = native.packPanels(w, s.n, s.k);
    return {
      ...s,
      w,
      panels,
      a: new Float32Array(Math.max(...rows) * s.k).fill(0.01),
      c: new Float32Array(Math.max(...rows) * s.n),
    };
  });
  const cpuMs: Record<string, number[]> = {};
  for (let r = 0; r < rounds; r++) {
    for (const s of widths) {
      for (const m of rows) {
        const run = () =>
          native.panelGemm(
            m,
            s.n,
            s.k,
            s.a.subarray(0, m * s.k),
            s.w,
            s.panels,
            s.c.subarray(0, m * s.n),
            false,
          );
        run();
        const reps = Math.max(1, Math.round(4e8 / (s.n * s.k * Math.max(m, 4))));
        const c0 = process.cpuUsage();
        for (let i = 0; i < reps; i++) run();
        const c = process.cpuUsage(c0);
        const key = `${s.name}, ${m} rows`;
        cpuMs[key] = [...(cpuMs[key] ?? []), (c.user + c.system) / 1000 / reps];
      }
    }
  }
  console.log(
    JSON.stringify({
      what,
      cpu_ms_median: Object.fromEntries(Object.entries(cpuMs).map(([key, xs]) => [key, median(xs)])),
      load: [load0, loadavg()[0]],
    }),
  );
} else if (what === 'gemm') {
  // The training step's products at the 0.6B widths on 512 tokens (Sgemm, the packed path): the
  // forward x W^T, the backward dX = dY W and dW = dY^T X. CPU ms and GFLOP/s per product, medians
  // over rounds, against the FMA peak of the threads it runs on (THREADS=1: one core's).
  const native = productEntries() as ProductEntries & { peakGflops(iters: number): { gflops: number } };
  const tokens = Number(process.env.TOKENS ?? 512);
  const shapes = [
    { name: 'q 1024->2048', n: 2048, k: 1024 },
    { name: 'k/v 1024->1024', n: 1024, k: 1024 },
    { name: 'gate/up 1024->3072', n: 3072, k: 1024 },
    { name: 'down 3072->1024', n: 1024, k: 3072 },
  ];
  const fill = (len: number) =>
    Float32Array.from({ length: len }, (_, i) => ((i * 7919) % 1000) / 1000 - 0.5);
  const cases = shapes.flatMap((s) => {
    const w = fill(s.n * s.k);
    const x = fill(tokens * s.k);
    const dy = fill(tokens * s.n);
    return [
      // [tokens, k] x [n, k]^T -> [tokens, n]
      {
        name: `${s.name} fwd`,
        run: (c: Float32Array) => native.gemm(false, true, tokens, s.n, s.k, 1, x, w, 0, c, false),
        out: tokens * s.n,
        flops: 2 * tokens * s.n * s.k,
      },
      // [tokens, n] x [n, k] -> [tokens, k]
      {
        name: `${s.name} dX`,
        run: (c: Float32Array) => native.gemm(false, false, tokens, s.k, s.n, 1, dy, w, 0, c, false),
        out: tokens * s.k,
        flops: 2 * tokens * s.n * s.k,
      },
      // [tokens, n]^T x [tokens, k] -> [n, k], accumulated
      {
        name: `${s.name} dW`,
        run: (c: Float32Array) => native.gemm(true, false, s.n, s.k, tokens, 1, dy, x, 1, c, false),
        out: s.n * s.k,
        flops: 2 * tokens * s.n * s.k,
      },
    ];
  });
  const outs = cases.map((c) => new Float32Array(c.out));
  const cpuMs: Record<string, number[]> = {};
  const peaks: number[] = [];
  for (let r = 0; r < rounds; r++) {
    peaks.push(native.peakGflops(1e7).gflops);
    cases.forEach((c, i) => {
      c.run(outs[i]!);
      const c0 = process.cpuUsage();
      const reps = 3;
      for (let j = 0; j < reps; j++) c.run(outs[i]!);
      const u = process.cpuUsage(c0);
      cpuMs[c.name] = [...(cpuMs[c.name] ?? []), (u.user + u.system) / 1000 / reps];
    });
  }
  // peakGflops runs on every engine thread; CPU time is per core.
  const corePeak = median(peaks) / Number(process.env.THREADS ?? 2);
  const flopsOf = Object.fromEntries(cases.map((c) => [c.name, c.flops]));
  const rows = Object.entries(cpuMs).map(([name, xs]) => {
    const ms = median(xs);
    const gflops = flopsOf[name]! / ms / 1e6;
    return { name, cpu_ms: ms, gflops_per_core: gflops, pct_of_core_peak: (100 * gflops) / corePeak };
  });
  const total = rows.reduce((a, r) => a + r.cpu_ms, 0);
  const allFlops = cases.reduce((a, c) => a + c.flops, 0);
  console.log(
    JSON.stringify({
      what,
      tokens,
      core_peak_gflops: corePeak,
      rows,
      total_cpu_ms: total,
      gflops_per_core_overall: allFlops / total / 1e6,
      load: [load0, loadavg()[0]],
    }),
  );
} else if (what === 'ce') {
  // One layer, hidden 256 and the full vocabulary: the cross-entropy's scratch (155 MB of logits)
  // weighs in a 512-token call.
  const model = createModel(
    { ...base, vocab_size: 151_936, num_hidden_layers: 1, hidden_size: 256, intermediate_size: 512 },
    { seed: 1 },
  );
  const seqs = [0, 1].map((s) => Array.from({ length: 256 }, (_, t) => (t * 7919 + s * 104729) % 150000));
  const batch = packSequences(seqs);
  const mask = new Uint8Array(512).fill(1);
  const times: number[] = [];
  const cpu: number[] = [];
  for (let r = 0; r < rounds + 1; r++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    model.sftLoss(batch, mask);
    model.zeroGrad();
    const c = process.cpuUsage(c0);
    if (r > 0) {
      times.push(performance.now() - t0);
      cpu.push((c.user + c.system) / 1000);
    }
  }
  console.log(
    JSON.stringify({
      what,
      cpu_ms_median: median(cpu),
      ms_median: median(times),
      cpu,
      load: [load0, loadavg()[0]],
    }),
  );
} else {
  // attention: 2 layers, 8 sequences decoding after 512-token prompts (attention-heavy);
  // decode: the same at 2 layers and 32-token prompts (the products' share is large).
  const prompt = Number(process.env.PROMPT ?? (what === 'attention' ? 512 : 32));
  const model = createModel(
    { ...base, vocab_size: 4096, num_hidden_layers: 2 },
    { seed: 3, training: false },
  );
  const batch = Number(process.env.BATCH ?? 8);
  const tps: number[] = [];
  const cpu: number[] = [];
  await decodeRun(model, batch, 2, true, prompt);
  for (let r = 0; r < rounds; r++) {
    const run = await decodeRun(model, batch, 16, true, prompt);
    tps.push(run.decodeTokensPerS);
    cpu.push(run.decodeCpuMsPerStep);
  }
  console.log(
    JSON.stringify({
      what,
      batch,
      prompt,
      cpu_ms_per_step_median: median(cpu),
      tokens_per_s_median: median(tps),
      cpu,
      load: [load0, loadavg()[0]],
    }),
  );
}
