// pnpm --filter @agentrl/kernels bench
// CPU fused policy loss at T = 4096, V in {32K, 152K}: time, bytes moved, achieved bandwidth against a
// copy measured in the same run, speed-up over the TS reference; fused-linear peak memory against
// full logits (T = 8192, V = 152K, H = 1024); WebGPU-on-lavapipe timings for information.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadNative } from '@agentrl/native';
import { disposeWebGpu, listBackends, policyLoss, policyLossSync } from '../src/index.js';
import type { KernelsAddon } from '../src/native/binding.js';
import { benchInputs } from './inputs.js';
import { fmt, GB, medianSeconds } from './timing.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../../..');
const quick = process.env.AGENTRL_BENCH_QUICK === '1';
const T = quick ? 512 : 4096;
const VOCABS = [32_768, 151_936]; // Llama-style 32K; Qwen2.5's 152K
const REF_T = quick ? 16 : 128; // the TS reference is slow: both sides run on the same T for the ratio
const results: Record<string, unknown> = {
  machine: `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB`,
  date: new Date().toISOString(),
  quick,
  T,
};
const log = (s: string) => console.log(s);

// ---- fused-linear memory (first, while this process is still small) ------------------------------------------------------------------------
const child = (variant: string, t: number, v: number, h: number) =>
  JSON.parse(
    execFileSync(
      process.execPath,
      [
        '--conditions=@agentrl/source',
        '--import',
        'tsx',
        resolve(here, 'memory-child.ts'),
        variant,
        String(t),
        String(v),
        String(h),
      ],
      {
        encoding: 'utf8',
        maxBuffer: 1 << 20,
      },
    ).trim(),
  ) as { peakRssBytes: number; rssBeforeBytes: number; workspaceBytes: number; seconds: number };
const [MT, MV, MH] = quick ? [1024, 32_768, 256] : [8192, 151_936, 1024];
// The fused run is compute-bound (4 GEMMs of 2 T V H flops); it runs at FT tokens and the
// T-proportional buffers (hidden, dHidden: 8 H bytes per token, + O(T) vectors) are added for MT.
const FT = 64;
const full = child('full', MT, MV, MH);
const fusedM = child('fused', FT, MV, MH);
const perToken = 8 * MH + 64;
const fusedAtMT = fusedM.peakRssBytes + (MT - FT) * perToken;
const params = 2 * 4 * MV * MH; // weight + dWeight, held by any training step
const mem = {
  T: MT,
  V: MV,
  H: MH,
  fullLogitsPeakRssBytes: full.peakRssBytes,
  fusedPeakRssBytesMeasuredAtT: FT,
  fusedPeakRssBytesMeasured: fusedM.peakRssBytes,
  fusedPeakRssBytesAtT: fusedAtMT,
  fusedWorkspaceBytes: fusedM.workspaceBytes,
  totalRatio: full.peakRssBytes / fusedAtMT,
  lossMemoryFullBytes: full.peakRssBytes - params,
  lossMemoryFusedBytes: fusedAtMT - params,
  lossMemoryRatio: (full.peakRssBytes - params) / (fusedAtMT - params),
  fusedSecondsAtFT: fusedM.seconds,
};
results.fusedLinearMemory = mem;
log(
  `fused-linear memory, T=${MT} V=${MV} H=${MH}: full logits peak RSS ${fmt(full.peakRssBytes / GB)} GB (measured); ` +
    `fused ${fmt(fusedAtMT / GB)} GB (measured ${fmt(fusedM.peakRssBytes / GB)} GB at T=${FT} + ${perToken} B/token); ` +
    `${fmt(mem.totalRatio)}x less in total; excluding weight + dWeight (${fmt(params / GB)} GB, held by training anyway): ` +
    `${fmt(mem.lossMemoryFullBytes / GB)} GB vs ${fmt(mem.lossMemoryFusedBytes / GB)} GB = ${fmt(mem.lossMemoryRatio, 1)}x; ` +
    `fused workspace ${fmt(fusedM.workspaceBytes / 2 ** 20, 1)} MiB`,
);

// ---- baselines, native, all threads: memcpy, and the in-place read-modify-write stream ------------
// Measured again right before each kernel (side by side; the machine is shared). A copy moves 3 lines
// per written line (read src, read-for-ownership dst, write back) but is counted as 2, as usual; an
// in-place kernel has no read-for-ownership, so the in-place scale is the stricter baseline.
const k = loadNative().kernels as KernelsAddon;
const n = 64 * 2 ** 20; // 256 MiB per buffer: far beyond cache
const src = new Float32Array(n).fill(1);
const dst = new Float32Array(n);
const baselines = async () => {
  const copyS = await medianSeconds(5, () => k.copyFloats({ src, dst }));
  const scaleS = await medianSeconds(5, () => k.scaleFloats({ data: dst, factor: 1.0000001 }));
  return { copy: (8 * n) / copyS, scale: (8 * n) / scaleS };
};

// ---- fused CPU kernel --------------------------------------------------------------------------
const kernels: Record<string, unknown>[] = [];
for (const V of VOCABS) {
  const inp = benchInputs(T, V);
  const base = await baselines();
  // in place: the bench holds one [T, V] buffer (2.5 GB at 152K); values stay finite run to run
  const fused = await medianSeconds(5, () => policyLossSync(inp, { inPlace: true }));
  // compulsory traffic: read each logit once, write each dlogit once (the second pass works on the
  // row's dlogits while they are in L2)
  const bytes = 8 * T * V;
  const bw = bytes / fused;
  const gspo = await medianSeconds(3, () => policyLossSync(inp, { inPlace: true, ratioLevel: 'sequence' }));
  const gspoBw = (12 * T * V) / gspo;
  const small = benchInputs(REF_T, V);
  const refS = await medianSeconds(1, () => policyLossSync(small, { backend: 'reference' }));
  const cpuSmall = await medianSeconds(3, () => policyLossSync(small, {}));
  const row = {
    V,
    copyGBs: base.copy / GB,
    inPlaceScaleGBs: base.scale / GB,
    fusedSeconds: fused,
    bytesMoved: bytes,
    achievedGBs: bw / GB,
    fractionOfCopy: bw / base.copy,
    fractionOfInPlaceScale: bw / base.scale,
    gspoSeconds: gspo,
    gspoAchievedGBs: gspoBw / GB,
    gspoFractionOfCopy: gspoBw / base.copy,
    referenceSpeedup: refS / cpuSmall,
    referenceT: REF_T,
  };
  kernels.push(row);
  log(
    `T=${T} V=${V}: copy ${fmt(base.copy / GB)} GB/s, in-place scale ${fmt(base.scale / GB)} GB/s; fused fwd+bwd ` +
      `${fmt(fused * 1000, 1)} ms, ${fmt(bytes / GB)} GB moved, ${fmt(bw / GB)} GB/s = ${fmt(bw / base.copy)} x copy, ` +
      `${fmt(bw / base.scale)} x in-place scale; GSPO (two sweeps, 12 B/logit) ${fmt(gspo * 1000, 1)} ms = ` +
      `${fmt(gspoBw / base.copy)} x copy; speed-up over TS reference at T=${REF_T}: ${fmt(refS / cpuSmall, 1)}x`,
  );
}
results.cpu = kernels;

// ---- WebGPU on whatever adapter Dawn finds (lavapipe here), for information ----------------------
const wg = (await listBackends()).find((b) => b.name === 'webgpu');
if (wg?.runnable) {
  const rows: Record<string, unknown>[] = [];
  for (const [t, V] of [
    [quick ? 256 : 1024, 32_768],
    [quick ? 64 : 256, 151_936],
  ] as const) {
    const inp = benchInputs(t, V);
    const s = await medianSeconds(2, () => policyLoss(inp, { backend: 'webgpu', inPlace: true }));
    const cpuS = await medianSeconds(2, () => policyLossSync(inp, { inPlace: true }));
    rows.push({ T: t, V, seconds: s, cpuSeconds: cpuS });
    log(
      `WebGPU (${wg.detail}) T=${t} V=${V}: ${fmt(s * 1000, 1)} ms incl. upload/readback; native CPU ${fmt(cpuS * 1000, 1)} ms`,
    );
  }
  results.webgpu = { adapter: wg.detail, rows };
  await disposeWebGpu();
}

mkdirSync(resolve(root, 'bench-results'), { recursive: true });
writeFileSync(resolve(root, 'bench-results/kernels.json'), `${JSON.stringify(results, null, 2)}\n`);
log(`wrote bench-results/kernels.json`);
