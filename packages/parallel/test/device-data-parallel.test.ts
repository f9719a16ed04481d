import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createAdamW,
  createModel,
  type Device,
  devicePolicyLoss,
  firstRunnableDevice,
} from '@agentrl/engine';
import { GRPO_ROC_NATIVE_LOSS, tinyModelConfig } from '@agentrl/engine/testing';
import { describe, expect, it } from 'vitest';
import {
  createNcclCommunicator,
  DeviceGradientAllReduce,
  LocalCommunicator,
  planDeviceBuckets,
  probeNccl,
  runMicroBatches,
} from '../src/index.js';
import { secondHalfMicroBatch } from './fixtures/micro-batch.js';
import { mpirunMissing, results, runMpi } from './mpirun.js';

// GPU ranks: gradients reduced on the device through NCCL / RCCL (DeviceGradientAllReduce). These
// run where a GPU device and NCCL/RCCL are present (scripts/gpu-check.sh), or WITHOUT a GPU under
// scripts/hip-cpu-check.sh with HIP_CPU_DP=1 (the HIP-CPU build of the engine's kernels plus a
// stand-in RCCL over MPI, test/fixtures/fake-libs/mpi_rccl.c); elsewhere they are listed as skipped
// with the reason. The bucket planner runs everywhere, on a real CPU model's layout.
const wanted = process.env.AGENTRL_GPU_TEST_DEVICE as Device | undefined;
const { device, reasons } = firstRunnableDevice(wanted ? [wanted] : ['cuda', 'rocm']);
const nccl = probeNccl();
const why = !device ? `no GPU: ${reasons}` : !nccl.available ? `NCCL/RCCL ${nccl.detail}` : undefined;
const where = why ? `skipped, ${why}` : `on ${device} with ${nccl.detail}`;
// Real NCCL refuses two ranks on one GPU: two ranks run where the HIP-CPU stand-in shares its one
// "device" (AGENTRL_DP_SHARED_DEVICE=1) or on a machine with two GPUs (AGENTRL_DP_MULTI_GPU=1, set
// by scripts/gpu-check.sh from nvidia-smi).
const twoRanks = process.env.AGENTRL_DP_SHARED_DEVICE === '1' || process.env.AGENTRL_DP_MULTI_GPU === '1';

describe('planDeviceBuckets', () => {
  const model = createModel(tinyModelConfig({ vocab_size: 61 }), { seed: 1 });
  const layout = model.gradientLayout();

  it('covers the flat gradient once, in backward order, head first and embedding last', () => {
    const buckets = planDeviceBuckets(layout, 1 << 30, model.flatLength);
    const sorted = [...buckets].sort((a, b) => a.start - b.start);
    let at = 0;
    for (const b of sorted) {
      expect(b.start).toBe(at);
      at = b.end;
    }
    expect(at).toBe(model.flatLength);
    // the engine pads small tensors: the padding rides in the buckets
    expect(model.flatLength).toBeGreaterThan(model.numParameters);
    // stages never increase from one bucket to the next: each is final no later than the one after
    for (let i = 1; i < buckets.length; i++)
      expect(buckets[i]!.stage).toBeLessThanOrEqual(buckets[i - 1]!.stage);
    expect(buckets.at(-1)!.stage).toBe(-1);
    expect(buckets[0]!.stage).toBe(model.shape.layers);
  });

  it('keeps buckets within the cap unless one tensor is larger, and contiguous', () => {
    const cap = 600;
    const buckets = planDeviceBuckets(layout, cap, model.flatLength);
    const largest = Math.max(...layout.map((t) => t.numel));
    expect(largest).toBeGreaterThan(cap);
    for (const b of buckets) {
      const inside = layout.filter((t) => t.offset >= b.start && t.offset + t.numel <= b.end);
      // whole tensors only, plus at most the padding after each
      expect(inside.reduce((n, t) => n + t.numel, 0)).toBeLessThanOrEqual(b.end - b.start);
      expect(inside.reduce((n, t) => n + t.numel + 16, 0)).toBeGreaterThanOrEqual(b.end - b.start);
      if (inside.length > 1) expect(b.end - b.start).toBeLessThanOrEqual(cap);
      // a bucket's stage is its last-finished member's
      expect(b.stage).toBe(Math.min(...inside.map((t) => t.stage)));
    }
    expect(buckets.length).toBeGreaterThan(model.shape.layers + 2);
  });

  it('a CPU model is not a device gradient source', () => {
    expect(() => model.setupDeviceReduce({}, [], true)).toThrow(/GPU models/);
  });
});

/** The fixed batch of a step: micro-batches of two sequences, loss on each second half. */
function batch(step: number, count: number) {
  return Array.from({ length: count }, (_, i) => {
    const seqs = [0, 1].map((j) =>
      Array.from(
        { length: 9 + ((step * 7 + i * 5 + j * 3) % 17) },
        (_, t) => (t * 13 + i * 7 + j + step) % 61,
      ),
    );
    return secondHalfMicroBatch(seqs);
  });
}

describe.skipIf(why !== undefined)(`data-parallel gradients on the device (${where})`, () => {
  it('world size 1 through NCCL: the exact reduce is the float64 host sum of each micro-batch, bit for bit', () => {
    const cfg = tinyModelConfig({ vocab_size: 61 });
    const a = createModel(cfg, { seed: 3, device });
    const b = createModel(cfg, { seed: 3, device });
    const comm = new LocalCommunicator();
    const nc = createNcclCommunicator(comm, { device: a.deviceIndex });
    const optA = createAdamW(a, { lr: 3e-3, maxGradNorm: 1 });
    const optB = createAdamW(b, { lr: 3e-3, maxGradNorm: 1 });
    for (let step = 0; step < 2; step++) {
      const micro = batch(step, 3);
      const targets = micro.reduce((n, m) => n + m.targets, 0);
      // a: the device reduce (2 KiB buckets, started during the last backward)
      const rows = runMicroBatches(
        { comm, model: a, count: 3, width: 1, reduce: { bucketBytes: 2048 }, nccl: nc },
        (i) => [a.sftLoss(micro[i]!.packed, micro[i]!.mask, { normalizer: targets }).lossSum],
      );
      // b: each micro-batch's gradients read to the host, summed in float64, rounded once
      const sum = new Float64Array(b.numParameters);
      const lossB: number[] = [];
      for (const mb of micro) {
        b.zeroGrad();
        lossB.push(b.sftLoss(mb.packed, mb.mask, { normalizer: targets }).lossSum);
        let at = 0;
        for (const p of b.parameters()) {
          for (let k = 0; k < p.grad.length; k++)
            sum[at + k] = (sum[at + k] as number) + (p.grad[k] as number);
          at += p.grad.length;
        }
      }
      let at = 0;
      for (const p of b.parameters()) {
        for (let k = 0; k < p.grad.length; k++) p.grad[k] = sum[at + k]!;
        at += p.grad.length;
      }
      expect(Array.from(rows)).toEqual(lossB);
      optA.step();
      optB.step();
    }
    const pa = a.parameters();
    const pb = b.parameters();
    for (let i = 0; i < pa.length; i++) expect(pa[i]!.data, pa[i]!.name).toEqual(pb[i]!.data);
    nc.destroy();
  });

  it('the overlapped reduce starts buckets inside the backward; blocking and fp32 in place agree', () => {
    const cfg = tinyModelConfig({ vocab_size: 61 });
    const comm = new LocalCommunicator();
    const weights = (opts: { overlap?: boolean; exact?: boolean }) => {
      const m = createModel(cfg, { seed: 5, device });
      const nc = createNcclCommunicator(comm, { device: m.deviceIndex });
      const reducer = new DeviceGradientAllReduce(m, nc, { bucketBytes: 2048, ...opts });
      const micro = batch(0, 2);
      const targets = micro.reduce((n, x) => n + x.targets, 0);
      m.sftLoss(micro[0]!.packed, micro[0]!.mask, { normalizer: targets });
      reducer.accumulate();
      reducer.runLast(() => m.sftLoss(micro[1]!.packed, micro[1]!.mask, { normalizer: targets }));
      const started = reducer.lastStarted;
      nc.destroy();
      return {
        grads: m.parameters().map((p) => Float32Array.from(p.grad)),
        started,
        buckets: reducer.buckets.length,
      };
    };
    const overlapped = weights({});
    const blocking = weights({ overlap: false });
    const inPlace = weights({ exact: false });
    // every bucket starts inside the backward (the embedding's at its end), none after it
    expect(overlapped.buckets).toBeGreaterThan(4);
    expect(overlapped.started).toBe(overlapped.buckets);
    expect(blocking.started).toBe(0);
    expect(overlapped.grads).toEqual(blocking.grads);
    // fp32 in place: the engine's float32 sum of the two micro-batches, within float32 rounding of
    // the exact one (per tensor, against its largest entry: sums in another order)
    for (let i = 0; i < inPlace.grads.length; i++) {
      const g = inPlace.grads[i]!;
      const e = overlapped.grads[i]!;
      const scale = e.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
      const worst = g.reduce((m, x, k) => Math.max(m, Math.abs(x - e[k]!)), 0);
      expect(worst).toBeLessThanOrEqual(1e-6 * scale);
      expect(scale).toBeGreaterThan(0);
    }
  });

  it('an RL step: the policy loss backward starts every bucket, and the exact reduce is the float64 sum', () => {
    const cfg = tinyModelConfig({ vocab_size: 61 });
    const comm = new LocalCommunicator();
    const micro = batch(1, 2);
    // The GRPO-RoC loss of each micro-batch: advantages of both signs, so clipped and unclipped
    // tokens, and ratios away from 1 (old log-probs are not the model's).
    const rl = micro.map((mb, i) => {
      const T = mb.packed.tokenIds.length;
      return {
        config: GRPO_ROC_NATIVE_LOSS,
        targets: Int32Array.from(mb.packed.tokenIds, (t, k) => (t * 5 + k + i) % 61),
        oldLogprobs: Float32Array.from({ length: T }, (_, k) => -4.1 + 0.4 * Math.sin(k + i)),
        advantages: Float32Array.from({ length: T }, (_, k) => ((k + i) % 3) - 1),
        lossMask: mb.mask,
        cuSeqlens: mb.packed.cuSeqlens,
        logp: new Float32Array(T),
      };
    });
    const step = (m: ReturnType<typeof createModel>, i: number) => {
      m.forwardHidden(micro[i]!.packed);
      return devicePolicyLoss(m, rl[i]!);
    };
    // a: the device reduce, its buckets started from the policy loss's backward
    const a = createModel(cfg, { seed: 9, device });
    const nc = createNcclCommunicator(comm, { device: a.deviceIndex });
    const reducer = new DeviceGradientAllReduce(a, nc, { bucketBytes: 2048 });
    const lossA = [step(a, 0).loss];
    reducer.accumulate();
    reducer.runLast(() => lossA.push(step(a, 1).loss));
    expect(reducer.buckets.length).toBeGreaterThan(4);
    expect(reducer.lastStarted).toBe(reducer.buckets.length);
    nc.destroy();
    // b: each micro-batch's gradients read to the host, summed in float64, rounded once
    const b = createModel(cfg, { seed: 9, device });
    const sums = b.parameters().map((p) => new Float64Array(p.grad.length));
    const lossB: number[] = [];
    for (let i = 0; i < micro.length; i++) {
      b.zeroGrad();
      lossB.push(step(b, i).loss);
      b.parameters().forEach((p, j) => {
        for (let k = 0; k < p.grad.length; k++) sums[j]![k]! += p.grad[k]!;
      });
    }
    expect(lossA).toEqual(lossB);
    expect(lossA.every((l) => l !== 0 && Number.isFinite(l))).toBe(true);
    a.parameters().forEach((p, j) => {
      expect(p.grad, p.name).toEqual(Float32Array.from(sums[j]!));
      // the policy gradient reached every tensor
      expect(
        p.grad.some((g) => g !== 0),
        p.name,
      ).toBe(true);
    });
  });

  it.skipIf(mpirunMissing() !== undefined || !twoRanks)(
    '1 and 2 ranks under mpirun end with bit-identical weights (exact); fp32 in place within rounding',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'agentrl-ddp-'));
      try {
        const env = { OMP_NUM_THREADS: '1', AGENTRL_DP_DEVICE: device! };
        const shas: string[] = [];
        let exactLosses: number[] = [];
        for (const n of [1, 2]) {
          const run = await runMpi(n, 'dp-step.ts', [join(dir, `w${n}.bin`), '2048'], {
            env,
            timeoutMs: 600_000,
          });
          expect(run.code, run.stderr).toBe(0);
          const rs = results<{ sha256: string; started: number; losses: number[] }>(run);
          expect(rs).toHaveLength(n);
          exactLosses = rs[0]!.losses;
          for (const r of rs) {
            shas.push(r.sha256);
            expect(r.started).toBeGreaterThan(0);
          }
        }
        expect(new Set(shas).size).toBe(1);
        const run = await runMpi(2, 'dp-step.ts', [join(dir, 'f32.bin'), '2048'], {
          env: { ...env, AGENTRL_DP_EXACT: '0' },
          timeoutMs: 600_000,
        });
        expect(run.code, run.stderr).toBe(0);
        const f32Ranks = results<{ sha256: string; losses: number[] }>(run);
        // NCCL gives every rank the same sum: the ranks stay in step
        expect(f32Ranks[0]!.sha256).toBe(f32Ranks[1]!.sha256);
        for (const [i, l] of f32Ranks[0]!.losses.entries()) expect(l).toBeCloseTo(exactLosses[i]!, 5);
        const read = (f: string) => {
          const buf = readFileSync(join(dir, f));
          return new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
        };
        const exact = read('w2.bin');
        const f32 = read('f32.bin');
        // Adam divides by sqrt(v): weights whose gradients are ~0 may move apart by up to lr; the rest agree
        let far = 0;
        for (let i = 0; i < exact.length; i++) if (Math.abs(exact[i]! - f32[i]!) > 1e-4) far++;
        expect(far).toBeLessThan(exact.length * 1e-3);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
