import type { Communicator, PendingReduce } from './communicator.js';
import {
  DeviceGradientAllReduce,
  type DeviceGradientSource,
  isDeviceGradientSource,
} from './device-gradients.js';
import { DistError, DistErrorCode } from './errors.js';
import { createNcclCommunicator, type NcclCommunicator } from './nccl.js';

/** What GradientAllReduce needs from a model (@agentrl/engine's Model has it). */
export interface GradientSource {
  parameters(): readonly { readonly name: string; readonly grad: Float32Array }[];
  zeroGrad(): void;
  /**
   * Optional, for the overlapped reduce: has the backward call `hook(stage)` as soon as the
   * gradients of `gradientStage(name) === stage` are final, stages in decreasing order
   * (@agentrl/engine's CPU Model: numLayers for the head, each layer, -1 for the embedding).
   */
  setGradientsDoneHook?(hook: ((stage: number) => void) | null): void;
  gradientStage?(name: string): number;
  /** Whether the backward actually calls that hook (false on a GPU model). */
  readonly reportsGradientStages?: boolean;
}

/** PyTorch DDP's default bucket (`bucket_cap_mb=25`), here in bytes of the float64 accumulator. */
export const DEFAULT_BUCKET_BYTES = 25 * 1024 * 1024;

export interface GradientReduceOptions {
  /** Bytes of float64 accumulator per all-reduce bucket (default 25 MiB; a larger parameter gets its own). */
  bucketBytes?: number;
  /**
   * Start each bucket's all-reduce as soon as the last micro-batch's backward has finished its
   * gradients, while the backward goes on (default true). Needs a communicator that overlaps (MPI
   * with MPI_THREAD_SERIALIZED) and a model whose backward reports its stages (the CPU engine);
   * otherwise the one blocking all-reduce at the end. GPU models (DeviceGradientAllReduce): the
   * device backward starts each bucket's ncclAllReduce on a side stream.
   */
  overlap?: boolean;
  /**
   * GPU models only (default true): reduce a float64 accumulator, so any number of ranks gives the
   * same bits (8 bytes per parameter on the device); false: NCCL sums the fp32 gradients in place.
   * CPU ranks always reduce float64.
   */
  exact?: boolean;
}

interface Slot {
  /** Index in model.parameters(). */
  param: number;
  /** Offset in the accumulator, whose layout is the backward's completion order. */
  at: number;
  stage: number;
}

interface Bucket {
  start: number;
  end: number;
  /** The bucket is final once the backward has reported this stage. */
  stage: number;
}

/**
 * All-reduce buckets from ranges [start, end) given in the order the backward finishes them: a
 * range joins the open bucket while it starts where the bucket ends and the bucket stays within
 * `cap` elements (an empty bucket takes any range, so a larger one gets a bucket of its own). A
 * bucket's stage is its last member's, the lowest: it is final once the backward reports that
 * stage. Host (GradientAllReduce) and device (planDeviceBuckets) buckets are both cut here.
 */
export function cutBuckets(ranges: Iterable<Bucket>, cap: number): Bucket[] {
  const buckets: Bucket[] = [];
  let open: Bucket | undefined;
  for (const r of ranges) {
    const joins =
      open !== undefined && open.end === r.start && (open.end === open.start || r.end - open.start <= cap);
    if (!joins || !open) {
      open = { start: r.start, end: r.start, stage: r.stage };
      buckets.push(open);
    }
    open.end = r.end;
    open.stage = r.stage;
  }
  return buckets;
}

/** `bucketBytes` of the reduce options (default DDP's 25 MiB), checked. */
export function bucketBytesOf(options: GradientReduceOptions): number {
  const bucketBytes = options.bucketBytes ?? DEFAULT_BUCKET_BYTES;
  if (!(Number.isFinite(bucketBytes) && bucketBytes >= 8)) {
    throw new DistError(
      DistErrorCode.INVALID_ARGUMENT,
      `bucketBytes must be a number of bytes >= 8 (one float64), got ${bucketBytes}`,
    );
  }
  return bucketBytes;
}

/**
 * Data-parallel gradients with a fixed reduction order. After each micro-batch's backward,
 * `accumulate()` adds the model's float32 gradients into a float64 accumulator and zeroes them;
 * `reduce()` sums the accumulators over ranks (MPI allreduce in float64) and writes the total back
 * into the model's gradients, so the optimizer step that follows is the same on every rank.
 * `runLast(work)` does both for a rank's last micro-batch with the reduce overlapping its backward:
 * bucket by bucket, last layer first, each bucket's all-reduce runs on MPI's comm thread while the
 * backward computes the layers below.
 *
 * Why float64: each micro-batch's gradient is computed the same way whichever rank runs it (same
 * packed micro-batch, same normaliser), so the update differs between 1 and N ranks only by the order
 * in which per-micro-batch gradients are summed. A float64 sum of a few float32 values is exact
 * (hence order-free) unless their magnitudes span more than ~2^29, and rounding it once to float32
 * gives the same bits for any split: 1 rank and N ranks end with bit-identical weights (the 2-rank
 * test checks it). Summing in float32 as the gradients arrive would differ in the last bits. Buckets
 * cut the same element-wise sums into pieces, so they change nothing in the result either.
 */
export class GradientAllReduce {
  readonly numParameters: number;
  /** The all-reduce buckets, in the order they are started (accumulator offsets). */
  readonly buckets: readonly Bucket[];
  private readonly acc: Float64Array;
  private readonly slots: readonly Slot[];
  private readonly overlap: boolean;
  private micro = 0;

  constructor(
    private readonly model: GradientSource,
    private readonly comm: Communicator,
    options: GradientReduceOptions = {},
  ) {
    const params = model.parameters();
    this.numParameters = params.reduce((n, p) => n + p.grad.length, 0);
    if (this.numParameters === 0) {
      throw new DistError(
        DistErrorCode.INVALID_ARGUMENT,
        'the model has no gradients (open it with training: true before data-parallel training)',
      );
    }
    const bucketBytes = bucketBytesOf(options);
    // the accumulator is laid out in completion order: head first, then layers last to first
    const stageOf = (name: string) => model.gradientStage?.(name) ?? -1;
    const order = params.map((p, i) => ({ i, stage: stageOf(p.name) }));
    order.sort((a, b) => b.stage - a.stage || a.i - b.i);
    const slots: Slot[] = [];
    let at = 0;
    for (const { i, stage } of order) {
      slots.push({ param: i, at, stage });
      at += (params[i] as { grad: Float32Array }).grad.length;
    }
    this.slots = slots;
    this.buckets = cutBuckets(
      slots.map((sl) => ({
        start: sl.at,
        end: sl.at + (params[sl.param] as { grad: Float32Array }).grad.length,
        stage: sl.stage,
      })),
      Math.floor(bucketBytes / 8),
    );
    this.acc = new Float64Array(this.numParameters);
    this.overlap =
      (options.overlap ?? true) &&
      comm.overlaps &&
      model.reportsGradientStages === true &&
      typeof model.setGradientsDoneHook === 'function';
  }

  /** Micro-batches accumulated on this rank since the last reduce(). */
  get microBatches(): number {
    return this.micro;
  }

  /** Whether runLast overlaps the all-reduce with the backward (see GradientReduceOptions.overlap). */
  get overlapping(): boolean {
    return this.overlap;
  }

  /** Moves the model's gradients (one micro-batch's) into the accumulator and zeroes them. */
  accumulate(): void {
    const params = this.model.parameters();
    for (const s of this.slots) this.add(params, s);
    this.model.zeroGrad();
    this.micro++;
  }

  /** Sums the accumulators over all ranks and writes the sum into the model's gradients. */
  reduce(): void {
    this.comm.allreduceSum(this.acc);
    this.writeBack();
  }

  /**
   * This rank's last micro-batch of the step: `work()` runs its forward and ONE backward; then its
   * gradients are accumulated and everything is reduced and written back, as accumulate() then
   * reduce() would. With overlap, the backward hands each finished stage over as it goes: its
   * gradients are accumulated, and each bucket whose stages are all final starts its all-reduce on
   * the comm thread at once. Returns what `work` returned.
   */
  runLast<R>(work: () => R): R {
    if (!this.overlap) {
      const r = work();
      this.accumulate();
      this.reduce();
      return r;
    }
    const params = this.model.parameters();
    const pending: PendingReduce[] = [];
    const done = new Set<number>();
    let next = 0;
    const startReady = (stage: number) => {
      while (next < this.buckets.length && (this.buckets[next] as Bucket).stage >= stage) {
        const b = this.buckets[next++] as Bucket;
        pending.push(this.comm.allreduceSumStart(this.acc.subarray(b.start, b.end)));
      }
    };
    this.model.setGradientsDoneHook!((stage) => {
      if (done.has(stage)) {
        throw new DistError(
          DistErrorCode.INVALID_ARGUMENT,
          `the last micro-batch ran a second backward (stage ${stage} reported twice): run one backward per micro-batch`,
        );
      }
      done.add(stage);
      for (const s of this.slots) {
        if (s.stage !== stage) continue;
        this.add(params, s);
        (params[s.param] as { grad: Float32Array }).grad.fill(0);
      }
      startReady(stage);
    });
    let r: R;
    try {
      r = work();
    } finally {
      this.model.setGradientsDoneHook!(null);
    }
    // what the backward did not report (nothing to train, or a backward that reports nothing)
    for (const s of this.slots) if (!done.has(s.stage)) this.add(params, s);
    startReady(Number.NEGATIVE_INFINITY);
    for (const p of pending) p.wait();
    this.micro++;
    this.writeBack();
    return r;
  }

  private add(params: readonly { readonly grad: Float32Array }[], s: Slot): void {
    const acc = this.acc;
    const g = (params[s.param] as { grad: Float32Array }).grad;
    const at = s.at;
    for (let i = 0; i < g.length; i++) acc[at + i] = (acc[at + i] as number) + (g[i] as number);
  }

  private writeBack(): void {
    const acc = this.acc;
    const params = this.model.parameters();
    for (const s of this.slots) {
      const g = (params[s.param] as { grad: Float32Array }).grad;
      for (let i = 0; i < g.length; i++) g[i] = acc[s.at + i] as number;
    }
    acc.fill(0);
    this.micro = 0;
  }
}

/** Element-wise sum over ranks of a few numbers (token counts, loss sums), in float64. */
export function globalSum(comm: Communicator, values: readonly number[]): number[] {
  const buf = Float64Array.from(values);
  comm.allreduceSum(buf);
  return Array.from(buf);
}

/** The contiguous block [start, end) of `count` items this rank works on (the first count % size ranks get one more). */
export function shardRange(count: number, comm: Pick<Communicator, 'rank' | 'size'>): [number, number] {
  const base = Math.floor(count / comm.size);
  const extra = count % comm.size;
  const start = comm.rank * base + Math.min(comm.rank, extra);
  return [start, start + base + (comm.rank < extra ? 1 : 0)];
}

/** The indices of `count` items this rank works on: i with i % size === rank (round robin). */
export function shardIndices(count: number, comm: Pick<Communicator, 'rank' | 'size'>): number[] {
  const out: number[] = [];
  for (let i = comm.rank; i < count; i += comm.size) out.push(i);
  return out;
}

/** What runMicroBatches needs of a reducer: GradientAllReduce (host) or DeviceGradientAllReduce. */
interface StepReducer {
  accumulate(): void;
  runLast<R>(work: () => R): R;
}

// one reducer (with its accumulator) per model and reduce options
const reducers = new WeakMap<object, Map<string, StepReducer>>();
// one NCCL / RCCL communicator per MPI communicator and GPU
const ncclComms = new WeakMap<Communicator, Map<number, NcclCommunicator>>();

function ncclFor(comm: Communicator, device: number): NcclCommunicator {
  const byDevice = ncclComms.get(comm) ?? new Map<number, NcclCommunicator>();
  ncclComms.set(comm, byDevice);
  let nccl = byDevice.get(device);
  if (!nccl) {
    nccl = createNcclCommunicator(comm, { device });
    byDevice.set(device, nccl);
  }
  return nccl;
}

/**
 * The reducer of a step under MPI, or with an explicit NCCL communicator (`opts.nccl`, e.g. a
 * world-size-1 check); undefined on a local communicator (the engine's own accumulation). A GPU
 * model reduces on the device through NCCL / RCCL, made over `comm` on the model's GPU the first time.
 */
function reducerFor(opts: MicroBatchRunOptions): StepReducer | undefined {
  if (opts.comm.backend !== 'mpi' && !opts.nccl) return undefined;
  const byOptions = reducers.get(opts.model) ?? new Map<string, StepReducer>();
  reducers.set(opts.model, byOptions);
  const key = JSON.stringify([opts.reduce?.bucketBytes, opts.reduce?.overlap, opts.reduce?.exact]);
  let reducer = byOptions.get(key);
  if (!reducer) {
    const model = opts.model;
    reducer = isDeviceGradientSource(model)
      ? new DeviceGradientAllReduce(model, opts.nccl ?? ncclFor(opts.comm, model.deviceIndex), opts.reduce)
      : new GradientAllReduce(model as GradientSource, opts.comm, opts.reduce);
    byOptions.set(key, reducer);
  }
  return reducer;
}

export interface MicroBatchRunOptions {
  comm: Communicator;
  model: GradientSource | DeviceGradientSource;
  /** Micro-batches in the step (the same list on every rank). */
  count: number;
  /** Numbers `work` returns per micro-batch (loss, metrics). */
  width: number;
  /** Buckets and overlap of the gradient all-reduce (one reducer, with its accumulator, per model and options). */
  reduce?: GradientReduceOptions;
  /**
   * GPU models: the NCCL / RCCL communicator to reduce with. Default under MPI: one made over `comm`
   * on the model's GPU. Given with a local communicator, it reduces through NCCL at world size 1
   * (the GPU machine's check of this path without mpirun).
   */
  nccl?: NcclCommunicator;
}

/**
 * One data-parallel optimizer step's micro-batches: under MPI this rank runs `work(i)` (forward +
 * backward of micro-batch i, normalised by the GLOBAL token count) for i % size === rank, with the
 * gradients accumulated in float64 and all-reduced at the end (GradientAllReduce); on a local
 * communicator it runs every micro-batch with the engine's own accumulation, as before. Returns the
 * `width` numbers of every micro-batch, row i at i * width, on every rank; a row is filled by one
 * rank only, so the all-reduce that shares them is exact, and folding them in order gives the
 * single-process metrics. `work` returns undefined for a micro-batch with nothing to train.
 */
export function runMicroBatches(
  opts: MicroBatchRunOptions,
  work: (index: number) => ArrayLike<number> | undefined,
): Float64Array {
  const { comm, count, width } = opts;
  const rows = new Float64Array(count * width);
  const reducer = reducerFor(opts);
  const mine = reducer ? shardIndices(count, comm) : Array.from({ length: count }, (_, i) => i);
  const keep = (i: number, r: ArrayLike<number> | undefined) => {
    if (!r) return;
    if (r.length !== width) {
      throw new DistError(
        DistErrorCode.INVALID_ARGUMENT,
        `work(${i}) returned ${r.length} numbers, expected ${width}`,
      );
    }
    rows.set(r, i * width);
  };
  if (!reducer) {
    for (const i of mine) keep(i, work(i));
    return rows;
  }
  // the last micro-batch's backward overlaps the gradient all-reduce (GradientAllReduce.runLast)
  const last = mine.at(-1);
  for (const i of mine) {
    if (i === last)
      keep(
        i,
        reducer.runLast(() => work(i)),
      );
    else {
      const r = work(i);
      keep(i, r);
      if (r) reducer.accumulate();
    }
  }
  // a rank without micro-batches still takes part in every bucket, in the same order
  if (last === undefined) reducer.runLast(() => undefined);
  comm.allreduceSum(rows);
  return rows;
}
