import type { Communicator } from './communicator.js';
import { DistError, DistErrorCode } from './errors.js';

/** What GradientAllReduce needs from a model (@agentrl/engine's Model has it). */
export interface GradientSource {
  parameters(): readonly { readonly grad: Float32Array }[];
  zeroGrad(): void;
}

/**
 * Data-parallel gradients with a fixed reduction order. After each micro-batch's backward,
 * `accumulate()` adds the model's float32 gradients into a float64 accumulator and zeroes them;
 * `reduce()` sums the accumulators over ranks (MPI allreduce in float64) and writes the total back
 * into the model's gradients, so the optimizer step that follows is the same on every rank.
 *
 * Why float64: each micro-batch's gradient is computed the same way whichever rank runs it (same
 * packed micro-batch, same normaliser), so the update differs between 1 and N ranks only by the order
 * in which per-micro-batch gradients are summed. A float64 sum of a few float32 values is exact
 * (hence order-free) unless their magnitudes span more than ~2^29, and rounding it once to float32
 * gives the same bits for any split: 1 rank and N ranks end with bit-identical weights (the 2-rank
 * test checks it). Summing in float32 as the gradients arrive would differ in the last bits.
 */
export class GradientAllReduce {
  readonly numParameters: number;
  private readonly acc: Float64Array;
  private micro = 0;

  constructor(
    private readonly model: GradientSource,
    private readonly comm: Communicator,
  ) {
    this.numParameters = model.parameters().reduce((n, p) => n + p.grad.length, 0);
    if (this.numParameters === 0) {
      throw new DistError(
        DistErrorCode.INVALID_ARGUMENT,
        'the model has no gradients (open it with training: true before data-parallel training)',
      );
    }
    this.acc = new Float64Array(this.numParameters);
  }

  /** Micro-batches accumulated on this rank since the last reduce(). */
  get microBatches(): number {
    return this.micro;
  }

  /** Moves the model's gradients (one micro-batch's) into the accumulator and zeroes them. */
  accumulate(): void {
    const acc = this.acc;
    let at = 0;
    for (const p of this.model.parameters()) {
      const g = p.grad;
      for (let i = 0; i < g.length; i++) acc[at + i] = (acc[at + i] as number) + (g[i] as number);
      at += g.length;
    }
    this.model.zeroGrad();
    this.micro++;
  }

  /** Sums the accumulators over all ranks and writes the sum into the model's gradients. */
  reduce(): void {
    this.comm.allreduceSum(this.acc);
    const acc = this.acc;
    let at = 0;
    for (const p of this.model.parameters()) {
      const g = p.grad;
      for (let i = 0; i < g.length; i++) g[i] = acc[at + i] as number;
      at += g.length;
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

const reducers = new WeakMap<GradientSource, GradientAllReduce>();

export interface MicroBatchRunOptions {
  comm: Communicator;
  model: GradientSource;
  /** Micro-batches in the step (the same list on every rank). */
  count: number;
  /** Numbers `work` returns per micro-batch (loss, metrics). */
  width: number;
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
  let reducer: GradientAllReduce | undefined;
  if (comm.backend === 'mpi') {
    reducer = reducers.get(opts.model);
    if (!reducer) {
      reducer = new GradientAllReduce(opts.model, comm);
      reducers.set(opts.model, reducer);
    }
  }
  const mine = reducer ? shardIndices(count, comm) : Array.from({ length: count }, (_, i) => i);
  for (const i of mine) {
    const r = work(i);
    if (!r) continue;
    if (r.length !== width) {
      throw new DistError(
        DistErrorCode.INVALID_ARGUMENT,
        `work(${i}) returned ${r.length} numbers, expected ${width}`,
      );
    }
    rows.set(r, i * width);
    reducer?.accumulate();
  }
  if (reducer) {
    reducer.reduce();
    comm.allreduceSum(rows);
  }
  return rows;
}
