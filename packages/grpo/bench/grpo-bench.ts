/**
 * `pnpm --filter @agentrl/grpo bench`: RoC + group advantages (broadcast to every loss token) over
 * 128 prompts x 32 trajectories x 2K tokens, against the naive implementation in the same run;
 * also packing, and the full zod parse that the package keeps out of the hot path.
 * Writes the headline figures to <repo root>/bench-results/grpo.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  broadcastAdvantage,
  computeGroupAdvantages,
  createSyntheticGroups,
  GRPO_DEFAULTS,
  packMicroBatches,
  parseGroups,
  resampleOnCorrect,
} from '../src/index.js';
import { naiveRocAndAdvantages } from './naive.js';

const PROMPTS = 128;
const GROUP = 32;
const TOKENS = 2048;
const RUNS = Number(process.env.AGENTRL_BENCH_RUNS ?? 21);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
/** CPU milliseconds of the last `time` call: on a shared machine it moves less than wall time. */
let lastCpuMs = 0;
function time(fn: () => unknown): number {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  fn();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  lastCpuMs = (c.user + c.system) / 1000;
  return wall;
}

console.log(`generating ${PROMPTS} prompts x ${GROUP} trajectories x ${TOKENS} tokens ...`);
const groups = createSyntheticGroups({ prompts: PROMPTS, groupSize: GROUP, tokens: TOKENS, seed: 1 });
const cfg = GRPO_DEFAULTS;

let reused = new Float32Array(0);
/**
 * The subject: RoC, group advantages, and every kept trajectory's per-token advantages, written
 * into one buffer. With `fresh` the buffer is allocated per run; otherwise it is reused across
 * runs as a trainer reuses its step buffers (a fresh 13 MB buffer per run mostly measures the
 * major GCs it triggers over the ~300 MB heap of trajectories).
 */
function subject(seed: number, fresh = false): number {
  const roc = resampleOnCorrect(groups, { ...cfg.roc, seed });
  const adv = computeGroupAdvantages(roc.groups, cfg.advantage);
  let tokens = 0;
  for (const g of roc.groups) for (const t of g.trajectories) tokens += t.tokenIds.length;
  if (fresh || reused.length < tokens) reused = new Float32Array(tokens);
  const perToken = reused;
  let at = 0;
  for (let gi = 0; gi < roc.groups.length; gi++) {
    const ts = roc.groups[gi]!.trajectories;
    for (let i = 0; i < ts.length; i++) {
      broadcastAdvantage(ts[i]!, adv[gi]!.advantages[i]!, perToken, at);
      at += ts[i]!.tokenIds.length;
    }
  }
  return at;
}

// Same answer first: the baseline is only a baseline if it computes the same thing.
const check = naiveRocAndAdvantages(groups, { ...cfg.roc, seed: 5 });
const roc5 = resampleOnCorrect(groups, { ...cfg.roc, seed: 5 });
const adv5 = computeGroupAdvantages(roc5.groups, cfg.advantage);
let k = 0;
for (const [gi, g] of roc5.groups.entries()) {
  for (const [i, t] of g.trajectories.entries()) {
    const mine = broadcastAdvantage(t, adv5[gi]!.advantages[i]!);
    const theirs = check[k++]!;
    if (mine.length !== theirs.length || mine.some((x, j) => Math.abs(x - theirs[j]!) > 1e-5))
      throw new Error(`bench: baseline and subject disagree on ${t.id}`);
  }
}
if (k !== check.length) throw new Error('bench: baseline kept a different number of trajectories');

for (let i = 0; i < 3; i++) {
  subject(i);
  naiveRocAndAdvantages(groups, { ...cfg.roc, seed: i });
}
const subjectMs: number[] = [];
const naiveMs: number[] = [];
const rocOnlyMs: number[] = [];
const freshMs: number[] = [];
const subjectCpuMs: number[] = [];
const naiveCpuMs: number[] = [];
const load = os.loadavg()[0]!;
// One block per contender, all in this run: interleaving run by run made each subject run pay for
// the collection of the naive baseline's garbage (it allocates ~100 MB per run).
for (let i = 0; i < RUNS; i++) {
  subjectMs.push(time(() => subject(100 + i)));
  subjectCpuMs.push(lastCpuMs);
}
for (let i = 0; i < RUNS; i++)
  rocOnlyMs.push(time(() => resampleOnCorrect(groups, { ...cfg.roc, seed: 100 + i })));
for (let i = 0; i < RUNS; i++) freshMs.push(time(() => subject(100 + i, true)));
for (let i = 0; i < RUNS; i++) {
  naiveMs.push(time(() => naiveRocAndAdvantages(groups, { ...cfg.roc, seed: 100 + i })));
  naiveCpuMs.push(lastCpuMs);
}

const roc = resampleOnCorrect(groups, { ...cfg.roc, seed: 1 });
const adv = computeGroupAdvantages(roc.groups, cfg.advantage);
const packMs: number[] = [];
let microBatches = 0;
for (let i = 0; i < Math.max(5, Math.floor(RUNS / 2)); i++)
  packMs.push(
    time(() => {
      microBatches = packMicroBatches(roc.groups, adv, {
        maxTokensPerMicroBatch: 65536,
        keepGroupsWhole: true,
      }).length;
    }),
  );
const plain = JSON.parse(JSON.stringify(groups.slice(0, 16)));
const parseMs = [0, 1, 2].map(() => time(() => parseGroups(plain)) * (PROMPTS / 16));

const result = {
  package: '@agentrl/grpo',
  date: new Date().toISOString(),
  machine: `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
  workload: { prompts: PROMPTS, groupSize: GROUP, keep: cfg.roc.n, tokensPerTrajectory: TOKENS, runs: RUNS },
  loadAverage1m: +load.toFixed(2),
  rocAndAdvantagesMedianMs: +median(subjectMs).toFixed(2),
  rocAndAdvantagesMinMs: +Math.min(...subjectMs).toFixed(2),
  rocAndAdvantagesCpuMedianMs: +median(subjectCpuMs).toFixed(2),
  naiveCpuMedianMs: +median(naiveCpuMs).toFixed(2),
  rocOnlyMedianMs: +median(rocOnlyMs).toFixed(2),
  freshBufferMedianMs: +median(freshMs).toFixed(2),
  naiveMedianMs: +median(naiveMs).toFixed(2),
  speedupVsNaive: +(median(naiveMs) / median(subjectMs)).toFixed(2),
  goalMs: 50,
  packMedianMs: +median(packMs).toFixed(2),
  microBatches,
  fullZodParseMsEstimate: +median(parseMs).toFixed(0),
};
console.log(`
machine: ${result.machine}, 1-min load average ${result.loadAverage1m}
RoC + advantages (per-token broadcast): median ${result.rocAndAdvantagesMedianMs} ms, min ${result.rocAndAdvantagesMinMs} ms (goal < ${result.goalMs} ms)
  CPU time (less load-sensitive):       median ${result.rocAndAdvantagesCpuMedianMs} ms, naive ${result.naiveCpuMedianMs} ms
  of which RoC alone:                   median ${result.rocOnlyMedianMs} ms
  with a fresh output buffer per run:   median ${result.freshBufferMedianMs} ms
naive baseline, same run:               median ${result.naiveMedianMs} ms -> ${result.speedupVsNaive}x the subject's time
packing ${roc.groups.reduce((n, g) => n + g.trajectories.length, 0)} kept trajectories into ${microBatches} micro-batches (64K tokens, groups whole): median ${result.packMedianMs} ms
full zod parse of the whole batch (measured on 16 prompts, scaled): ~${result.fullZodParseMsEstimate} ms: why it stays at the edge`);

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
mkdirSync(resolve(root, 'bench-results'), { recursive: true });
writeFileSync(resolve(root, 'bench-results/grpo.json'), `${JSON.stringify(result, null, 2)}\n`);
console.log(`wrote ${resolve(root, 'bench-results/grpo.json')}`);
