// `pnpm bench` (packages/parallel): step time of data-parallel training with the blocking gradient
// all-reduce vs the bucketed one that overlaps the last micro-batch's backward, 2 ranks under
// `mpirun -n 2`, on the smoke model and a ~54M-parameter one, in the same run (modes alternate step
// by step). Medians; writes bench-results/parallel.json at the repository root.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mpirunMissing, runMpirun } from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../../..');
const missing = mpirunMissing();
if (missing) {
  console.error(`parallel bench: cannot run: ${missing}`);
  process.exit(1);
}

const MODELS = {
  // the smoke preset's shape (hidden 64, 2 layers, intermediate 128) on a 256-token vocabulary
  smoke: '64,2,128,256,256,7',
  // ~54M parameters: hidden 640, 10 layers, intermediate 1920, 8K vocabulary
  '54m': '640,10,1920,8192,64,5',
};

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

const threads = process.env.OMP_NUM_THREADS ?? '1';
const rows: Record<string, unknown>[] = [];
for (const [name, spec] of Object.entries(MODELS)) {
  const run = await runMpirun(
    2,
    [
      process.execPath,
      '--conditions=@agentrl/source',
      '--import',
      'tsx',
      resolve(here, 'overlap-step.ts'),
      spec,
    ],
    { env: { OMP_NUM_THREADS: threads, OMPI_MCA_mpi_yield_when_idle: '1' }, timeoutMs: 900_000 },
  );
  if (run.code !== 0) throw new Error(`${name}: mpirun exited ${run.code}\n${run.stderr}`);
  const r = run.stdout
    .split('\n')
    .filter((l) => l.startsWith('RESULT '))
    .map((l) => JSON.parse(l.slice(7)))
    .find((x) => x.rank === 0);
  const blocking = median(r.steps.blocking);
  const overlapped = median(r.steps.overlapped);
  const row = {
    model: name,
    params: r.params,
    buckets: r.buckets,
    overlapping: r.overlapping,
    tokensPerMicroBatch: r.tokensPerMicroBatch,
    microBatchesPerRank: r.microBatchesPerRank,
    steps: r.steps.blocking.length,
    allreduceMsMedian: median(r.allreduceMs),
    blockingStepMsMedian: blocking,
    overlappedStepMsMedian: overlapped,
    savedMs: blocking - overlapped,
    savedPct: (100 * (blocking - overlapped)) / blocking,
    raw: r.steps,
  };
  rows.push(row);
  console.log(
    `${name}: ${r.params} params, ${r.buckets} buckets; all-reduce ${row.allreduceMsMedian.toFixed(1)} ms; step blocking ${blocking.toFixed(1)} ms, overlapped ${overlapped.toFixed(1)} ms (${row.savedPct.toFixed(1)} %)`,
  );
}
mkdirSync(resolve(root, 'bench-results'), { recursive: true });
writeFileSync(
  resolve(root, 'bench-results/parallel.json'),
  `${JSON.stringify({ date: new Date().toISOString(), ranks: 2, ompThreads: Number(threads), cpus: cpus().length, rows }, null, 2)}\n`,
);
