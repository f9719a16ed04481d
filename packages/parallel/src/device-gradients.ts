import { DistError, DistErrorCode } from './errors.js';
import { bucketBytesOf, cutBuckets, type GradientReduceOptions } from './gradients.js';
import type { NcclCommunicator } from './nccl.js';

/** A bucket of the flat device gradient: [start, end) parameter offsets, complete after `stage`. */
export interface DeviceBucket {
  start: number;
  end: number;
  stage: number;
}

/** What DeviceGradientAllReduce needs from a GPU model (@agentrl/engine's Model on cuda / rocm has it). */
export interface DeviceGradientSource {
  /** 'cuda' | 'rocm' (anything but 'cpu'). */
  readonly device: string;
  /** The GPU the model lives on; the NCCL communicator is made on the same one. */
  readonly deviceIndex: number;
  gradientLayout(): readonly { name: string; offset: number; numel: number; stage: number }[];
  /** Floats in the flat gradient buffer, alignment padding between tensors included. */
  readonly flatLength: number;
  setupDeviceReduce(ncclComm: unknown, buckets: readonly DeviceBucket[], exact: boolean): void;
  deviceReduceAccumulate(): void;
  deviceReduceArm(): void;
  deviceReduceFinish(): number;
}

/** Whether `model` is a GPU model whose gradients can be reduced on the device. */
export function isDeviceGradientSource(model: object): model is DeviceGradientSource {
  const m = model as Partial<DeviceGradientSource>;
  return typeof m.setupDeviceReduce === 'function' && m.device !== undefined && m.device !== 'cpu';
}

/**
 * The all-reduce buckets of a device gradient of `flatLength` floats: its tensors in the order the
 * backward finishes them (stage descending, then offset), merged while they are contiguous in the
 * flat buffer and the bucket stays within `capElements` (a larger tensor gets a bucket of its own).
 * Each tensor's range runs to the next tensor's offset, so the alignment padding between tensors
 * (zeros) rides along and the buckets cover [0, flatLength) once each, which the device checks.
 * A bucket's stage is its last member's, the lowest: it is complete once the backward reports it.
 */
export function planDeviceBuckets(
  layout: readonly { offset: number; numel: number; stage: number }[],
  capElements: number,
  flatLength = layout.reduce((n, t) => Math.max(n, t.offset + t.numel), 0),
): DeviceBucket[] {
  const byOffset = [...layout].sort((a, b) => a.offset - b.offset);
  const extent = byOffset.map((t, i) => ({
    start: i === 0 ? 0 : t.offset,
    end: i + 1 < byOffset.length ? (byOffset[i + 1] as { offset: number }).offset : flatLength,
    stage: t.stage,
  }));
  extent.sort((a, b) => b.stage - a.stage || a.start - b.start);
  return cutBuckets(
    extent.filter((t) => t.end > t.start),
    capElements,
  );
}

// The reducer whose buckets the model's device object holds now (setupDeviceReduce replaces them).
const active = new WeakMap<DeviceGradientSource, DeviceGradientAllReduce>();

/**
 * Data-parallel gradients of a GPU model, reduced on the device with NCCL / RCCL: nothing crosses to
 * the host. The same contract as GradientAllReduce: `accumulate()` after each micro-batch but the
 * last, `runLast(work)` for the last, after which every rank holds the sum of all ranks' gradients.
 *
 * - `exact` (default true): each micro-batch's fp32 gradients are added into a float64 accumulator
 *   on the device, the accumulator is all-reduced in float64 and rounded once, so 1, 2 or N ranks
 *   give the same bits (the argument of GradientAllReduce). Costs 8 bytes per parameter.
 *   `exact: false`: the engine accumulates micro-batches in its fp32 gradients and NCCL sums those
 *   in place (no extra memory; the result depends on NCCL's summation order, within fp32 rounding
 *   of the exact sum: about N ulps for N ranks).
 * - Overlap (default on): for the last micro-batch the device backward starts each bucket's
 *   ncclAllReduce on a side stream as soon as the bucket's stage is done (an event orders it after
 *   the compute stream's work so far), the way PyTorch DDP's reducer does; the optimizer step waits
 *   for them on the device. `overlap: false` starts every bucket after the backward.
 *   `bucketBytes` counts bytes of what is reduced (float64 in exact mode, else float32).
 */
export class DeviceGradientAllReduce {
  readonly buckets: readonly DeviceBucket[];
  readonly exact: boolean;
  private readonly overlap: boolean;
  private micro = 0;
  /** Buckets the last runLast's backward started before it ended (0 without overlap). */
  lastStarted = 0;

  constructor(
    private readonly model: DeviceGradientSource,
    private readonly nccl: NcclCommunicator,
    options: GradientReduceOptions = {},
  ) {
    const bucketBytes = bucketBytesOf(options);
    this.exact = options.exact ?? true;
    this.overlap = options.overlap ?? true;
    this.buckets = planDeviceBuckets(
      model.gradientLayout(),
      Math.max(1, Math.floor(bucketBytes / (this.exact ? 8 : 4))),
      model.flatLength,
    );
    if (this.buckets.length === 0) {
      throw new DistError(DistErrorCode.INVALID_ARGUMENT, 'the model has no gradients to reduce');
    }
    this.activate();
  }

  /** Hands this reducer's buckets (and a fresh accumulator) to the device, between steps only. */
  private activate(): void {
    if (active.get(this.model) === this) return;
    if (this.micro > 0) {
      throw new DistError(
        DistErrorCode.INVALID_ARGUMENT,
        "another reducer of this model ran in the middle of this one's step: finish a step with runLast before starting another reducer",
      );
    }
    this.model.setupDeviceReduce(this.nccl.nativeHandle, this.buckets, this.exact);
    active.set(this.model, this);
  }

  get microBatches(): number {
    return this.micro;
  }

  get overlapping(): boolean {
    return this.overlap;
  }

  /** A micro-batch before this rank's last: into the float64 accumulator (exact), or left in the fp32 gradients. */
  accumulate(): void {
    this.activate();
    this.model.deviceReduceAccumulate();
    this.micro++;
  }

  /** This rank's last micro-batch: `work()` runs its forward and one backward, which starts the buckets. */
  runLast<R>(work: () => R): R {
    this.activate();
    if (this.overlap) this.model.deviceReduceArm();
    let r: R;
    try {
      r = work();
    } finally {
      // also when work threw: the armed reduce is finished, so every rank issues every bucket
      this.lastStarted = this.model.deviceReduceFinish();
      this.micro = 0;
    }
    return r;
  }
}
