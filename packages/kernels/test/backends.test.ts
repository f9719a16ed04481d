import { afterAll, describe, expect, it } from 'vitest';
import { parsePolicyLossConfig } from '../src/config.js';
import {
  type Backend,
  disposeWebGpu,
  listBackends,
  type PolicyLossInputs,
  type PolicyLossOptions,
  policyLoss,
} from '../src/index.js';
import { webgpuPolicyLoss } from '../src/webgpu/webgpu-policy-loss.js';
import { expectMatches, relMaxError } from './compare.js';
import { describeEachCpuKernelPath } from './cpu-kernel-paths.js';
import { makeInputs, resetOldLogprobs } from './fixtures.js';

const backends = await listBackends();
const runnable = (name: Backend) => backends.find((b) => b.name === name)?.runnable === true;
const reason = (name: Backend) => backends.find((b) => b.name === name)?.detail ?? 'unknown';

afterAll(() => disposeWebGpu());

const CONFIGS: PolicyLossOptions[] = [
  {},
  { aggregation: 'seq-mean-token-sum', computeEntropy: true },
  { aggregation: 'seq-mean-token-mean', temperature: 0.7 },
  { aggregation: 'seq-mean-token-sum-norm', horizon: 64, temperature: 1.3 },
  { ratioLevel: 'sequence', computeEntropy: true },
  { ratioLevel: 'sequence', aggregation: 'seq-mean-token-mean', dualClip: null },
  { clipLow: 0.1, clipHigh: 0.1, dualClip: 1.5, tokenCount: 100, maxLogRatio: 0.3 },
];

const EDGE_CASES: [string, () => PolicyLossInputs, PolicyLossOptions][] = [
  ['V = 1', () => makeInputs({ seqLens: [3, 2], V: 1, seed: 11 }), { computeEntropy: true }],
  ['T = 0', () => makeInputs({ seqLens: [], V: 17, seed: 12 }), { computeEntropy: true }],
  [
    'empty sequences and all rows masked out',
    () => makeInputs({ seqLens: [0, 4, 0, 3], V: 33, seed: 13, maskRate: 0 }),
    { aggregation: 'seq-mean-token-mean' },
  ],
  [
    'huge logits (1e4 offset, spikes at 3e4: exp would overflow without the max shift)',
    () => {
      const inp = makeInputs({ seqLens: [4, 4], V: 301, seed: 14, drift: 0.1 });
      for (let i = 0; i < inp.logits.length; i++) inp.logits[i] = inp.logits[i]! + 1e4;
      for (let t = 0; t < 8; t++) {
        // a peaked row, as at low entropy: the sampled token and one rival far above the rest
        inp.logits[t * 301 + inp.targets[t]!] = 3e4 + t;
        inp.logits[t * 301 + ((inp.targets[t]! + 1) % 301)] = 3e4 + t + 0.5;
      }
      resetOldLogprobs(inp, 0.1);
      return inp;
    },
    { computeEntropy: true },
  ],
  [
    '-inf logits (not the target)',
    () => {
      const inp = makeInputs({ seqLens: [5, 3], V: 257, seed: 15 });
      for (let t = 0; t < 8; t++)
        for (let j = 0; j < 257; j += 3)
          if (j !== inp.targets[t]) inp.logits[t * 257 + j] = Number.NEGATIVE_INFINITY;
      return inp;
    },
    { computeEntropy: true },
  ],
  [
    '-inf target logit (log-ratio clamp, no gradient through it)',
    () => {
      const inp = makeInputs({ seqLens: [4], V: 40, seed: 16 });
      inp.logits[2 * 40 + inp.targets[2]!] = Number.NEGATIVE_INFINITY;
      return inp;
    },
    {},
  ],
  [
    'temperature 0.25',
    () => makeInputs({ seqLens: [6, 5], V: 500, seed: 17 }),
    { temperature: 0.25, computeEntropy: true },
  ],
  ['all advantages zero', () => makeInputs({ seqLens: [6, 5], V: 200, seed: 18, zeroAdvantages: true }), {}],
  [
    'far-off old logprobs (every clip fires)',
    () => makeInputs({ seqLens: [9, 9, 9], V: 64, seed: 19, drift: 3 }),
    {},
  ],
];

/** The reference comparisons of one backend (the CPU's run once per CPU kernel path, below). */
function agreesWithReference(backend: Backend): void {
  const skip = !runnable(backend);
  const tag = skip ? ` (skipped: ${backend} not runnable here: ${reason(backend)})` : '';

  it.skipIf(skip)(`agrees with the reference on random inputs for every config${tag}`, async () => {
    let seed = 100;
    for (const cfg of CONFIGS) {
      for (const shape of [
        { seqLens: [7, 1, 12], V: 1000 },
        { seqLens: [33], V: 4099 },
      ]) {
        const inp = makeInputs({ ...shape, seed: seed++ });
        const ref = await policyLoss(inp, { ...cfg, backend: 'reference' });
        const got = await policyLoss(inp, { ...cfg, backend });
        expectMatches(got, ref);
      }
    }
  });

  it.skipIf(skip).each(EDGE_CASES)(`edge case: %s${tag}`, async (_name, make, cfg) => {
    const inp = make();
    const ref = await policyLoss(inp, { ...cfg, backend: 'reference' });
    const got = await policyLoss(inp, { ...cfg, backend });
    expect(Number.isFinite(ref.loss)).toBe(true);
    expectMatches(got, ref);
    if (_name === 'all advantages zero') {
      expect(got.loss).toBe(0);
      expect(got.dlogits.every((x) => x === 0)).toBe(true);
    }
  });

  it.skipIf(skip)(`writes dlogits in place or into a given buffer${tag}`, async () => {
    const inp = makeInputs({ seqLens: [4, 6], V: 777, seed: 5 });
    const ref = await policyLoss(inp, { backend: 'reference' });
    const gradOut = new Float32Array(inp.logits.length);
    const into = await policyLoss(inp, { backend, gradOut });
    expect(into.dlogits).toBe(gradOut);
    expect(relMaxError(gradOut, ref.dlogits)).toBeLessThan(1e-4);
    const copy = { ...inp, logits: inp.logits.slice() };
    const inPlace = await policyLoss(copy, { backend, inPlace: true });
    expect(inPlace.dlogits).toBe(copy.logits);
    expect(relMaxError(copy.logits, ref.dlogits)).toBeLessThan(1e-4);
  });
}

describeEachCpuKernelPath('backend cpu', () => agreesWithReference('cpu'));
describe.each(['webgpu', 'cuda', 'hip'] as const)('backend %s', (backend) => agreesWithReference(backend));

describe('async native calls', () => {
  it('policyLoss on the CPU runs off the event loop (most of its time is awaited, timers fire)', async () => {
    const inp = makeInputs({ seqLens: [128], V: 1, seed: 1 });
    const V = 1 << 18;
    const big = {
      ...inp,
      vocabSize: V,
      targets: new Int32Array(128).fill(5),
      logits: new Float32Array(128 * V).fill(0.25),
    };
    await policyLoss(big, { backend: 'cpu', inPlace: true }); // warm-up
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const t0 = performance.now();
    const pending = policyLoss(big, { backend: 'cpu', inPlace: true });
    const t1 = performance.now();
    const r = await pending;
    const t2 = performance.now();
    clearInterval(timer);
    expect(Number.isFinite(r.loss)).toBe(true);
    // a synchronous kernel would spend its time before `await` (t1 - t0) and let no timer run
    expect(t2 - t1).toBeGreaterThan(t1 - t0);
    expect(ticks).toBeGreaterThan(0);
  });
});

describe('webgpu chunking', () => {
  it.skipIf(!runnable('webgpu'))(
    'rows split across storage-binding chunks give the same result',
    async () => {
      const inp = makeInputs({ seqLens: [5, 6, 2], V: 300, seed: 41 });
      const cfg = parsePolicyLossConfig({ ratioLevel: 'sequence', computeEntropy: true });
      const ref = await policyLoss(inp, {
        ratioLevel: 'sequence',
        computeEntropy: true,
        backend: 'reference',
      });
      // 4 rows per chunk: 13 rows -> 4 chunks, the last one short
      expectMatches(await webgpuPolicyLoss(inp, cfg, {}, 13, 4 * 300 * 4), ref);
    },
  );
});

describe('listBackends', () => {
  it('reports the reference and the CPU as runnable and every backend with a reason', () => {
    expect(runnable('reference')).toBe(true);
    expect(runnable('cpu')).toBe(true);
    for (const b of backends) expect(b.detail.length).toBeGreaterThan(0);
    expect(backends.map((b) => b.name).sort()).toEqual(['cpu', 'cuda', 'hip', 'reference', 'webgpu']);
  });

  it.each(['cuda', 'hip'] as const)('says whether %s was compiled in and, if it cannot run, why', (name) => {
    const b = backends.find((x) => x.name === name)!;
    // CI builds with nvcc and hipcc present: compiled, and on a GPU-less machine not runnable.
    if (!b.compiled) expect(b.detail).toMatch(/not compiled in/);
    else if (!b.runnable) expect(b.detail).toMatch(/no usable device|no .* device is present|cannot load/i);
    else expect(b.detail).toMatch(/device/);
  });
});
