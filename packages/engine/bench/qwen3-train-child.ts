// One process of qwen3.bench-run.ts's training rounds: the engine's side (it runs in its own process
// as the PyTorch peer does, so the two ~10 GB training states are never resident together).
//   node --conditions=@agentrl/source --import tsx bench/qwen3-train-child.ts '{"seqs":2,"len":256,"steps":1}'
import { existsSync, readFileSync } from 'node:fs';
import { packSequences } from '../src/batch.js';
import { createModel } from '../src/model.js';
import { setEngineThreads } from '../src/native.js';
import { createAdamW } from '../src/optimizer.js';
import { QWEN3_0_6B } from './qwen3-shape.js';

const req = JSON.parse(process.argv[2] ?? '{}') as {
  seqs?: number;
  len?: number;
  steps?: number;
  config?: object;
};
const seqs = req.seqs ?? 2;
const len = req.len ?? 256;
const threads = setEngineThreads(Number(process.env.ENGINE_BENCH_THREADS ?? 2));
const model = createModel({ ...QWEN3_0_6B, ...req.config }, { seed: 1 });
const opt = createAdamW(model, { lr: 1e-6 });
// The PyTorch peer's tokens: sequence s is ids(len, s + 1), each token predicting the next.
const ids = (n: number, salt: number) =>
  Array.from({ length: n }, (_, i) => (i * 7919 + salt * 104729) % Math.min(model.shape.vocab, 150000));
const batch = packSequences(Array.from({ length: seqs }, (_, s) => ids(len, s + 1)));
const mask = new Uint8Array(batch.tokenIds.length).fill(1);
const out = { threads, fwd_bwd_s: [] as number[], adamw_s: [] as number[] };
for (let step = 0; step < 1 + (req.steps ?? 1); step++) {
  const t0 = performance.now();
  model.sftLoss(batch, mask);
  const t1 = performance.now();
  opt.step();
  const t2 = performance.now();
  if (step > 0) {
    out.fwd_bwd_s.push((t1 - t0) / 1000);
    out.adamw_s.push((t2 - t1) / 1000);
  }
}
// How much of this process sits on transparent huge pages (the engine asks for them on its large
// buffers; the kernel grants them only as free 2 MiB blocks allow): the step runs ~10 % slower on
// 4 KiB pages, so the bench records it beside the times.
const rollup = existsSync('/proc/self/smaps_rollup') ? readFileSync('/proc/self/smaps_rollup', 'utf8') : '';
const kib = (field: string) =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? Number.NaN);
console.log(
  JSON.stringify({ ...out, rss_gib: kib('Rss') / 2 ** 20, anon_huge_gib: kib('AnonHugePages') / 2 ** 20 }),
);
