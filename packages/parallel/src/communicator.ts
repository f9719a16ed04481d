import { loadNative } from '@agentrl/native';
import { DistError, DistErrorCode, fromNative } from './errors.js';
import { decodeJson, encodeJson } from './json-codec.js';

/** MPI thread support levels (MPI_THREAD_SINGLE .. MPI_THREAD_MULTIPLE; the same values in Open MPI and MPICH). */
export const THREAD_LEVELS = { single: 0, funneled: 1, serialized: 2, multiple: 3 } as const;
export type ThreadLevel = keyof typeof THREAD_LEVELS;

/**
 * The collectives data-parallel training needs, over all ranks of the job. Every call is
 * collective: all ranks make the same calls in the same order, or the job hangs until a rank dies.
 */
export interface Communicator {
  readonly backend: 'local' | 'mpi';
  readonly rank: number;
  readonly size: number;
  barrier(): void;
  /** Overwrites `buffer` on every rank with root's bytes (same length on every rank). */
  broadcast(buffer: Uint8Array, root?: number): void;
  /** In place: every rank ends with the element-wise sum over ranks. */
  allreduceSum(buffer: Float32Array | Float64Array): void;
  /** Every rank's `send` (the same length everywhere), concatenated in rank order. */
  allgather(send: Uint8Array): Uint8Array;
  /** Root passes one part per rank (any lengths); every rank gets its own part. Others pass undefined. */
  scatter(parts: readonly Uint8Array[] | undefined, root?: number): Uint8Array;
  /**
   * Starts an in-place float64 sum over ranks of `buffer` and returns at once; `wait()` before
   * reading or writing it. All ranks start the same buffers in the same order. Where `overlaps` is
   * false it is the blocking all-reduce, done before it returns.
   */
  allreduceSumStart(buffer: Float64Array): PendingReduce;
  /** True when allreduceSumStart runs on MPI's side while this thread computes (a comm thread). */
  readonly overlaps: boolean;
  /** Ends the whole job with `code` (after printing `message` on stderr). */
  abort(code: number, message?: string): never;
  finalize(): void;
}

/** A started all-reduce (Communicator.allreduceSumStart). */
export interface PendingReduce {
  /** Blocks until the sum is in the buffer. Idempotent. */
  wait(): void;
}

const DONE: PendingReduce = { wait() {} };

interface MpiBinding {
  probe(): MpiProbe;
  init(threadLevel: number): { rank: number; size: number; threadLevel: number; library: string };
  barrier(): void;
  broadcast(buffer: Uint8Array, root: number): void;
  allreduceSum(buffer: Float32Array | Float64Array): void;
  allgather(send: Uint8Array, recv: Uint8Array): void;
  scatterv(send: Uint8Array, counts: Int32Array, recv: Uint8Array, root: number): void;
  allreduceSumAsync(buffer: Float64Array): number;
  wait(ticket: number): void;
  abort(code: number): never;
  finalize(): void;
}

/** What `dlopen` found: `available` is true only for a usable Open MPI. */
export interface MpiProbe {
  available: boolean;
  implementation: 'openmpi' | 'mpich' | 'unknown' | 'none';
  library: string;
  /** Library version, or why MPI cannot be used here and what to install. */
  detail: string;
  initialized: boolean;
  finalized: boolean;
}

function binding(): MpiBinding {
  return loadNative().mpi as MpiBinding;
}

function call<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    return fromNative(err);
  }
}

/** Probes the MPI library (dlopen, no MPI_Init). */
export function probeMpi(): MpiProbe {
  return call(() => binding().probe());
}

/** The launcher's world size when this process was started by mpirun / srun, else undefined. */
export function launchedWorldSize(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env.OMPI_COMM_WORLD_SIZE ?? env.PMI_SIZE;
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/** One process: collectives are copies (allreduce leaves the buffer as it is). */
export class LocalCommunicator implements Communicator {
  readonly backend = 'local' as const;
  readonly rank = 0;
  readonly size = 1;
  readonly overlaps = false;
  barrier(): void {}
  broadcast(buffer: Uint8Array, root = 0): void {
    checkBytes(buffer, 'buffer');
    checkRoot(root, 1);
  }
  allreduceSum(buffer: Float32Array | Float64Array): void {
    checkFloats(buffer);
  }
  allgather(send: Uint8Array): Uint8Array {
    checkBytes(send, 'send');
    return send.slice();
  }
  scatter(parts: readonly Uint8Array[] | undefined, root = 0): Uint8Array {
    checkRoot(root, 1);
    checkParts(parts, 1);
    return (parts![0] as Uint8Array).slice();
  }
  allreduceSumStart(buffer: Float64Array): PendingReduce {
    checkF64(buffer);
    return DONE;
  }
  abort(code: number, message?: string): never {
    if (message) process.stderr.write(`${message}\n`);
    process.exit(code);
  }
  finalize(): void {}
}

/** MPI_COMM_WORLD through the native binding. Create it with createCommunicator(). */
export class MpiCommunicator implements Communicator {
  readonly backend = 'mpi' as const;
  readonly rank: number;
  readonly size: number;
  /** The thread level MPI provided, and the library's version string. */
  readonly threadLevel: number;
  readonly library: string;
  readonly overlaps: boolean;
  #mpi: MpiBinding;

  constructor(threadLevel: ThreadLevel = 'serialized') {
    this.#mpi = binding();
    const r = call(() => this.#mpi.init(THREAD_LEVELS[threadLevel]));
    this.rank = r.rank;
    this.size = r.size;
    this.threadLevel = r.threadLevel;
    this.library = r.library;
    // the comm thread needs MPI_THREAD_SERIALIZED (one thread in MPI at a time, any thread)
    this.overlaps = r.threadLevel >= THREAD_LEVELS.serialized;
  }
  barrier(): void {
    call(() => this.#mpi.barrier());
  }
  broadcast(buffer: Uint8Array, root = 0): void {
    checkBytes(buffer, 'buffer');
    checkRoot(root, this.size);
    call(() => this.#mpi.broadcast(buffer, root));
  }
  allreduceSum(buffer: Float32Array | Float64Array): void {
    checkFloats(buffer);
    call(() => this.#mpi.allreduceSum(buffer));
  }
  allgather(send: Uint8Array): Uint8Array {
    checkBytes(send, 'send');
    const recv = new Uint8Array(send.length * this.size);
    call(() => this.#mpi.allgather(send, recv));
    return recv;
  }
  scatter(parts: readonly Uint8Array[] | undefined, root = 0): Uint8Array {
    checkRoot(root, this.size);
    const isRoot = this.rank === root;
    if (isRoot) checkParts(parts, this.size);
    // every rank learns every part's length first (MPI_Scatterv wants the counts everywhere)
    const counts = new Int32Array(this.size);
    if (isRoot) for (const [r, p] of parts!.entries()) counts[r] = p.length;
    call(() => this.#mpi.broadcast(new Uint8Array(counts.buffer), root));
    let send = new Uint8Array(0);
    if (isRoot) {
      send = new Uint8Array(counts.reduce((a, b) => a + b, 0));
      let at = 0;
      for (const p of parts!) {
        send.set(p, at);
        at += p.length;
      }
    }
    const recv = new Uint8Array(counts[this.rank] as number);
    call(() => this.#mpi.scatterv(send, counts, recv, root));
    return recv;
  }
  allreduceSumStart(buffer: Float64Array): PendingReduce {
    checkF64(buffer);
    if (!this.overlaps) {
      this.allreduceSum(buffer);
      return DONE;
    }
    const ticket = call(() => this.#mpi.allreduceSumAsync(buffer));
    let waited = false;
    return {
      wait: () => {
        if (waited) return;
        call(() => this.#mpi.wait(ticket));
        waited = true;
      },
    };
  }
  abort(code: number, message?: string): never {
    if (message) process.stderr.write(`rank ${this.rank}: ${message}\n`);
    return call(() => this.#mpi.abort(code));
  }
  finalize(): void {
    call(() => this.#mpi.finalize());
  }
}

export interface CreateCommunicatorOptions {
  /**
   * MPI thread support to ask for (default `serialized`: the JS thread and the comm thread of
   * allreduceSumStart, one at a time; with `funneled` or `single` there is no overlap).
   */
  threadLevel?: ThreadLevel;
  /** Environment to read the launcher's variables from (default process.env). */
  env?: NodeJS.ProcessEnv;
}

let world: Communicator | undefined;

/**
 * The job's communicator: MPI when this process was launched by mpirun / srun (OMPI_COMM_WORLD_SIZE
 * or PMI_SIZE is set), a single-process one otherwise. Under a launcher without a usable Open MPI it
 * throws (DIST_UNAVAILABLE) instead of silently training N independent copies. One per process.
 */
export function createCommunicator(options: CreateCommunicatorOptions = {}): Communicator {
  if (world) return world;
  const size = launchedWorldSize(options.env);
  if (size === undefined) {
    world = new LocalCommunicator();
    return world;
  }
  const probe = probeMpi();
  if (!probe.available) {
    throw new DistError(
      DistErrorCode.UNAVAILABLE,
      `launched by an MPI launcher (world size ${size}) but MPI cannot be used: ${probe.detail}`,
    );
  }
  world = new MpiCommunicator(options.threadLevel);
  return world;
}

/**
 * Broadcasts a JSON value from root (two broadcasts: length, then bytes); NaN, infinities and typed
 * arrays survive (json-codec.ts).
 */
export function broadcastJson<T>(comm: Communicator, value: T | undefined, root = 0): T {
  const bytes = comm.rank === root ? encodeJson(value) : new Uint8Array(0);
  const len = new Uint8Array(new Float64Array([bytes.length]).buffer);
  comm.broadcast(len, root);
  const n = new Float64Array(len.buffer)[0] as number;
  const buf = comm.rank === root ? bytes : new Uint8Array(n);
  comm.broadcast(buf, root);
  return decodeJson<T>(buf);
}

/** Root's `parts[r]` (a JSON value, typed arrays kept) goes to rank r; every rank returns its own. */
export function scatterJson<T>(comm: Communicator, parts: readonly T[] | undefined, root = 0): T {
  const bytes = comm.rank === root ? (parts ?? []).map(encodeJson) : undefined;
  return decodeJson<T>(comm.scatter(bytes, root));
}

/** Gathers one JSON value from every rank, in rank order (lengths first, then padded bytes). */
export function allgatherJson<T>(comm: Communicator, value: T): T[] {
  const bytes = encodeJson(value);
  const lens = new Float64Array(
    comm.allgather(new Uint8Array(new Float64Array([bytes.length]).buffer)).buffer,
  );
  const max = Math.max(...lens);
  const padded = new Uint8Array(max);
  padded.set(bytes);
  const all = comm.allgather(padded);
  const out: T[] = [];
  for (let r = 0; r < comm.size; r++) {
    const n = lens[r] as number;
    out.push(decodeJson<T>(all.subarray(r * max, r * max + n)));
  }
  return out;
}

function checkBytes(b: unknown, what: string): void {
  if (!(b instanceof Uint8Array)) {
    throw new DistError(DistErrorCode.INVALID_ARGUMENT, `${what} must be a Uint8Array`);
  }
}

function checkFloats(b: unknown): void {
  if (!(b instanceof Float32Array) && !(b instanceof Float64Array)) {
    throw new DistError(
      DistErrorCode.INVALID_ARGUMENT,
      'allreduceSum takes a Float32Array or a Float64Array (the gradient buffer, in place)',
    );
  }
}

function checkF64(b: unknown): void {
  if (!(b instanceof Float64Array)) {
    throw new DistError(
      DistErrorCode.INVALID_ARGUMENT,
      'allreduceSumStart takes a Float64Array (a bucket of the float64 gradient accumulator)',
    );
  }
}

function checkParts(parts: readonly Uint8Array[] | undefined, size: number): void {
  if (!Array.isArray(parts) || parts.length !== size || !parts.every((p) => p instanceof Uint8Array)) {
    throw new DistError(
      DistErrorCode.INVALID_ARGUMENT,
      `scatter on the root takes one Uint8Array per rank (${size}), got ${Array.isArray(parts) ? `${parts.length} items` : String(parts)}`,
    );
  }
}

function checkRoot(root: number, size: number): void {
  if (!Number.isInteger(root) || root < 0 || root >= size) {
    throw new DistError(
      DistErrorCode.INVALID_ARGUMENT,
      `root must be an integer rank in [0, ${size - 1}], got ${root}`,
    );
  }
}
