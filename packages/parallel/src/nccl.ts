import { loadNative } from '@agentrl/native';
import type { Communicator } from './communicator.js';
import { DistError, DistErrorCode, fromNative } from './errors.js';

/** What dlopen found for NCCL (CUDA) or RCCL (ROCm). */
export interface NcclProbe {
  available: boolean;
  implementation: 'nccl' | 'rccl' | 'none';
  library: string;
  /** NCCL_VERSION_CODE, e.g. 22105 for 2.21.5; 0 when not loaded. */
  version: number;
  /** Library, version and devices, or why it is not available. */
  detail: string;
}

type NcclHandle = { readonly __brand: 'NcclComm' };
interface NcclBinding {
  probe(): NcclProbe;
  uniqueId(): Uint8Array;
  initRank(id: Uint8Array, nranks: number, rank: number, device: number): NcclHandle;
  allreduceSum(comm: NcclHandle, buffer: Float32Array | Float64Array): void;
  broadcast(comm: NcclHandle, buffer: Uint8Array, root: number): void;
  destroy(comm: NcclHandle): void;
}

function binding(): NcclBinding {
  return loadNative().nccl as NcclBinding;
}

function call<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    return fromNative(err);
  }
}

/** Probes NCCL / RCCL and a GPU runtime (dlopen; nothing is initialised). */
export function probeNccl(): NcclProbe {
  return call(() => binding().probe());
}

/** The bytes of an ncclUniqueId (NCCL_UNIQUE_ID_BYTES in nccl.h). */
export const NCCL_UNIQUE_ID_BYTES = 128;

/**
 * An NCCL / RCCL communicator over the same ranks as `mpi`: rank 0 makes the unique id, MPI
 * broadcasts it, every rank joins with ncclCommInitRank on `device`. Its own allreduceSum and
 * broadcast stage host typed arrays through device memory; a GPU model's gradients are reduced on
 * the device instead (runMicroBatches / DeviceGradientAllReduce hand this communicator to the
 * engine). Not run on a GPU yet.
 */
export class NcclCommunicator {
  readonly rank: number;
  readonly size: number;
  #h: NcclHandle | undefined;

  constructor(mpi: Communicator, device: number) {
    const probe = probeNccl();
    if (!probe.available) throw new DistError(DistErrorCode.UNAVAILABLE, `NCCL/RCCL is ${probe.detail}`);
    const id = mpi.rank === 0 ? call(() => binding().uniqueId()) : new Uint8Array(NCCL_UNIQUE_ID_BYTES);
    mpi.broadcast(id, 0);
    this.rank = mpi.rank;
    this.size = mpi.size;
    this.#h = call(() => binding().initRank(id, mpi.size, mpi.rank, device));
  }

  allreduceSum(buffer: Float32Array | Float64Array): void {
    const h = this.#live();
    call(() => binding().allreduceSum(h, buffer));
  }

  broadcast(buffer: Uint8Array, root = 0): void {
    const h = this.#live();
    call(() => binding().broadcast(h, buffer, root));
  }

  /** The native communicator, for the engine's device reduce (Model.setupDeviceReduce). @internal */
  get nativeHandle(): unknown {
    return this.#live();
  }

  destroy(): void {
    if (!this.#h) return;
    const h = this.#h;
    this.#h = undefined;
    call(() => binding().destroy(h));
  }

  #live(): NcclHandle {
    if (!this.#h) throw new DistError(DistErrorCode.INVALID_ARGUMENT, 'the NCCL communicator was destroyed');
    return this.#h;
  }
}

/** NCCL/RCCL over the ranks of `mpi`, on `device` (default: rank mod the devices per node is the caller's choice; 0 here). */
export function createNcclCommunicator(
  mpi: Communicator,
  options: { device?: number } = {},
): NcclCommunicator {
  return new NcclCommunicator(mpi, options.device ?? 0);
}
