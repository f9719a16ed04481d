import { listBackends, loadNative, type NativeOperation, nativeBuildCommand } from '@agentrl/native';
import type { NativeModelConfig } from './config.js';
import { EngineError } from './errors.js';
import type { Model } from './model.js';
import { type CacheHandle, type EngineBinding, engineBinding, type ModelHandle } from './native.js';

/** Where a model's parameters, gradients, optimizer state and activations live. */
export type Device = 'cpu' | 'cuda' | 'rocm';
export const DEVICES: readonly Device[] = ['cpu', 'cuda', 'rocm'];

/**
 * Matrix products on a GPU device: `fp32` (fp32 inputs and compute) or `bf16` (fp32 storage and
 * fp32 master weights, every product's inputs rounded to bf16 with fp32 accumulation: cuBLASLt /
 * hipBLASLt COMPUTE_32F_FAST_16BF on tensor cores, or the fallback kernel rounding the same way).
 * The CPU engine computes in fp32 only and refuses `bf16`.
 */
export type DevicePrecision = 'fp32' | 'bf16';

export interface DeviceOptions {
  /** Default `cpu`. `cuda` needs agentrl_cuda.so and an NVIDIA GPU; `rocm` agentrl_hip.so and an AMD GPU. */
  device?: Device;
  /** Default `fp32`. */
  precision?: DevicePrecision;
  /**
   * Which GPU (0-based, of those visible). Default: the process's local rank under a launcher
   * (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID, LOCAL_RANK) modulo the devices
   * visible, so `mpirun -n <gpus>` puts one rank on each GPU of a node; 0 otherwise.
   */
  deviceIndex?: number;
}

/** One bucket of a device model's data-parallel gradient all-reduce (see Model.setupDeviceReduce). */
export interface DeviceReduceBucket {
  /** Range [start, end) of the flat gradient (parameter offsets). */
  start: number;
  end: number;
  /** Complete once the backward has finished this stage (Model.gradientStage). */
  stage: number;
}

/** The fused-linear policy-loss arguments of a device model (the shape of @agentrl/kernels' call). */
export interface DevicePolicyLossArgs {
  config: Record<string, number>;
  targets: Int32Array;
  oldLogprobs: Float32Array;
  advantages: Float32Array;
  lossMask: Uint8Array;
  cuSeqlens: Int32Array;
  logp: Float32Array;
  entropy?: Float32Array;
}

export interface DevicePolicyLossMetrics {
  loss: number;
  tokens: number;
  clipFracLow: number;
  clipFracHigh: number;
  clipFracDual: number;
  approxKl: number;
  ppoKl: number;
  entropy: number;
  workspaceBytes: number;
}

/** One row of an on-device draw: the request's sampling knobs and its uniform in [0, 1). */
export interface DeviceSampleRow {
  temperature: number;
  /** <= 0 or >= vocab: no top-k cut */
  topK: number;
  topP: number;
  /** The request's own next uniform (its random stream lives on the host; greedy rows ignore it). */
  uniform: number;
}

/** What the device object did since it was loaded: bytes copied each way, device allocations made. */
export interface DeviceTransfers {
  toDevice: number;
  toHost: number;
  allocations: number;
}

/** The addon's `engineGpu` component (native/src/engine/gpu_bindings.cc). */
interface EngineGpuBinding
  extends Omit<
    EngineBinding,
    'createModel' | 'backend' | 'buffers' | 'extendInvariant' | 'packForDecode' | 'forward' | 'extend'
  > {
  createModel(
    config: NativeModelConfig,
    device: 'cuda' | 'hip',
    precision: number,
  ): ReturnType<EngineBinding['createModel']>;
  buffers(handle: ModelHandle): { params: ArrayBuffer; grads: ArrayBuffer };
  forward(
    handle: ModelHandle,
    tokens: Int32Array,
    cu: Int32Array,
    recompute: boolean,
    download?: boolean,
  ): Float32Array | undefined;
  extend(
    handle: ModelHandle,
    caches: CacheHandle[],
    tokens: Int32Array,
    counts: Int32Array,
    logits: Float32Array | undefined,
  ): void;
  syncToHost(handle: ModelHandle): void;
  syncToDevice(handle: ModelHandle): void;
  /** params [rows * 4]: temperature, topK, topP, uniform; returns [rows * 2]: token, logprob. */
  sample(handle: ModelHandle, params: Float64Array): Float64Array;
  policyLoss(handle: ModelHandle, args: DevicePolicyLossArgs): DevicePolicyLossMetrics;
  gemmPath(device: 'cuda' | 'hip'): string;
  transfers(device: 'cuda' | 'hip'): DeviceTransfers;
  setDevice(device: 'cuda' | 'hip', index: number): number;
  reduceSetup(
    handle: ModelHandle,
    ncclComm: unknown,
    starts: Float64Array,
    ends: Float64Array,
    stages: Int32Array,
    exact: boolean,
  ): void;
  reduceAccumulate(handle: ModelHandle): void;
  reduceArm(handle: ModelHandle): void;
  reduceFinish(handle: ModelHandle): number;
}

/** An engine binding for a device model; the extra entry points exist only off the CPU. */
export interface DeviceEngineBinding extends EngineBinding {
  readonly device: Device;
  /** The training forward with the hidden states left on the device (nothing [T, H] comes back). */
  forwardResident(handle: ModelHandle, tokens: Int32Array, cu: Int32Array, recompute: boolean): void;
  /** extend with the last-token logits left on the device, for sample. */
  extendResident(handle: ModelHandle, caches: CacheHandle[], tokens: Int32Array, counts: Int32Array): void;
  sample(handle: ModelHandle, params: Float64Array): Float64Array;
  policyLoss(handle: ModelHandle, args: DevicePolicyLossArgs): DevicePolicyLossMetrics;
  gemmPath(): string;
  transfers(): DeviceTransfers;
  /** The GPU this binding's models live on (DeviceOptions.deviceIndex, resolved). */
  readonly deviceIndex: number;
  reduceSetup(
    handle: ModelHandle,
    ncclComm: unknown,
    buckets: readonly DeviceReduceBucket[],
    exact: boolean,
  ): void;
  reduceAccumulate(handle: ModelHandle): void;
  reduceArm(handle: ModelHandle): void;
  reduceFinish(handle: ModelHandle): number;
}

const LOCAL_RANK_VARS = ['OMPI_COMM_WORLD_LOCAL_RANK', 'MPI_LOCALRANKID', 'SLURM_LOCALID', 'LOCAL_RANK'];

/** This process's rank on its node under a launcher (see DeviceOptions.deviceIndex), or 0. */
export function localRank(env: NodeJS.ProcessEnv = process.env): number {
  for (const name of LOCAL_RANK_VARS) {
    const v = env[name];
    if (v !== undefined && /^\d+$/.test(v)) return Number(v);
  }
  return 0;
}

// The device current on the JS thread (the runtimes keep it per thread); -1: not set by us yet.
let currentDevice = { name: '', index: -1 };

function resolveDeviceIndex(gpu: EngineGpuBinding, name: 'cuda' | 'hip', wanted: number | undefined): number {
  const count = gpu.setDevice(name, -1);
  if (wanted === undefined) return localRank() % Math.max(count, 1);
  if (!(Number.isInteger(wanted) && wanted >= 0 && wanted < count)) {
    throw new EngineError(
      'INVALID_CONFIG',
      `deviceIndex must be an integer in [0, ${count}) (the ${name} devices visible here); got ${String(wanted)}`,
    );
  }
  return wanted;
}

const nativeName = (device: Exclude<Device, 'cpu'>): 'cuda' | 'hip' => (device === 'cuda' ? 'cuda' : 'hip');

/**
 * Why `operation` cannot run on `device` here, or undefined when it can (from listBackends()).
 */
export function deviceUnavailableReason(
  device: Device,
  operation: NativeOperation = 'engineTrain',
): string | undefined {
  if (device === 'cpu') return undefined;
  let info: ReturnType<typeof listBackends>[number] | undefined;
  try {
    info = listBackends().find((b) => b.name === nativeName(device));
  } catch (err) {
    return (err as Error).message.split('\n')[0];
  }
  if (!info) return `the addon reports no ${nativeName(device)} backend`;
  const op = info.operations[operation];
  return op.runnable ? undefined : op.detail;
}

/**
 * The first of `candidates` that can run `operation` here, or undefined; `reasons` lists why each
 * refused one cannot ("cuda: ...; rocm: ..."), for a log line or the name of a skipped GPU test.
 */
export function firstRunnableDevice(
  candidates: readonly Device[],
  operation: NativeOperation = 'engineTrain',
): { device: Device | undefined; reasons: string } {
  const refused: string[] = [];
  for (const d of candidates) {
    const why = deviceUnavailableReason(d, operation);
    if (why === undefined) return { device: d, reasons: refused.join('; ') };
    refused.push(`${d}: ${why}`);
  }
  return { device: undefined, reasons: refused.join('; ') };
}

/**
 * The binding of a model on `device`. The CPU gets the engine component as is. A GPU device gets
 * the engineGpu component wrapped so that the host mirror (the Float32Array views that
 * `parameters()`, `lmHeadWeight()` and `adamMoments()` return) stays consistent: reading the views
 * downloads what changed on the device, and the next device call uploads the mirror again (JS may
 * have written it: a checkpoint load, an optimizer-state restore). Views must not be written after
 * a later device call without asking for them again.
 */
export function bindingForDevice(options: DeviceOptions = {}): EngineBinding | DeviceEngineBinding {
  const device = options.device ?? 'cpu';
  if (!DEVICES.includes(device)) {
    throw new EngineError(
      'INVALID_CONFIG',
      `device must be one of ${DEVICES.join(', ')}; got ${String(device)}`,
    );
  }
  if (options.precision !== undefined && options.precision !== 'fp32' && options.precision !== 'bf16') {
    throw new EngineError(
      'INVALID_CONFIG',
      `precision must be fp32 or bf16; got ${String(options.precision)}`,
    );
  }
  if (device === 'cpu') {
    if (options.precision === 'bf16') {
      throw new EngineError(
        'INVALID_CONFIG',
        "precision 'bf16' needs a GPU device (cuda or rocm): the CPU engine computes in fp32; leave precision unset or pass 'fp32'",
      );
    }
    return engineBinding();
  }
  const why = deviceUnavailableReason(device);
  if (why !== undefined) {
    throw new EngineError(
      'NATIVE_FAILURE',
      `device '${device}' cannot run the engine here: ${why}. Use device: 'cpu', or run on a machine with the GPU and its driver`,
    );
  }
  const gpu = loadNative().engineGpu as EngineGpuBinding | undefined;
  if (!gpu) {
    throw new EngineError(
      'NATIVE_FAILURE',
      `the native addon has no "engineGpu" component; rebuild it: ${nativeBuildCommand()}`,
    );
  }
  return wrapGpu(gpu, device, options.precision === 'bf16' ? 1 : 0, options.deviceIndex);
}

interface MirrorState {
  /** the device holds changes the mirror lacks */
  hostStale: boolean;
  /** JS was handed the mirror views and may have written them */
  mirrorLive: boolean;
}

function wrapGpu(
  gpu: EngineGpuBinding,
  device: Exclude<Device, 'cpu'>,
  precision: number,
  wantedIndex: number | undefined,
): DeviceEngineBinding {
  const name = nativeName(device);
  const deviceIndex = resolveDeviceIndex(gpu, name, wantedIndex);
  /** Makes this binding's GPU current before a call (cheap when it already is). */
  const use = () => {
    if (currentDevice.name === name && currentDevice.index === deviceIndex) return;
    gpu.setDevice(name, deviceIndex);
    currentDevice = { name, index: deviceIndex };
  };
  const states = new WeakMap<object, MirrorState>();
  const stateOf = (h: ModelHandle): MirrorState => {
    let s = states.get(h);
    if (!s) {
      s = { hostStale: false, mirrorLive: false };
      states.set(h, s);
    }
    return s;
  };
  /** Before a device call: push a mirror JS may have written; after one that mutates: mark stale. */
  const onDevice = <R>(h: ModelHandle, mutates: boolean, call: () => R): R => {
    use();
    const s = stateOf(h);
    if (s.mirrorLive) {
      gpu.syncToDevice(h);
      s.mirrorLive = false;
    }
    try {
      return call();
    } finally {
      // also when the call threw: it may have changed device state before failing, and the host
      // views must not pass off their older copy as current
      if (mutates) s.hostStale = true;
    }
  };
  const cacheOwner = new WeakMap<object, ModelHandle>();
  return {
    device,
    backend: device,
    deviceIndex,
    createModel: (config) => {
      use();
      return gpu.createModel(config, name, precision);
    },
    buffers: (h) => gpu.buffers(h),
    // The mirror views; JS may write the moments (an optimizer-state restore): beforeHostAccess runs first.
    optimizerBuffers: (h) => gpu.optimizerBuffers(h),
    enableTraining: (h) => gpu.enableTraining(h),
    memoryBytes: (h) => gpu.memoryBytes(h),
    beforeHostAccess: (h) => {
      use();
      const s = stateOf(h);
      if (s.hostStale) gpu.syncToHost(h);
      s.hostStale = false;
      s.mirrorLive = true;
    },
    initParams: (h, seed, std) => {
      use();
      gpu.initParams(h, seed, std);
      stateOf(h).mirrorLive = false;
    },
    forward: (h, tokens, cu, recompute) =>
      onDevice(h, false, () => gpu.forward(h, tokens, cu, recompute, true) as Float32Array),
    forwardResident: (h, tokens, cu, recompute) => {
      onDevice(h, false, () => gpu.forward(h, tokens, cu, recompute, false));
    },
    backward: (h, dh, dlm) => onDevice(h, true, () => gpu.backward(h, dh, dlm)),
    crossEntropy: (h, targets, scale) => onDevice(h, true, () => gpu.crossEntropy(h, targets, scale)),
    logits: (h, out) => onDevice(h, false, () => gpu.logits(h, out)),
    zeroGrad: (h) => onDevice(h, true, () => gpu.zeroGrad(h)),
    gradNormSquared: (h) => onDevice(h, false, () => gpu.gradNormSquared(h)),
    adamw: (h, lr, b1, b2, eps, wd, step, scale) =>
      onDevice(h, true, () => gpu.adamw(h, lr, b1, b2, eps, wd, step, scale)),
    createCache: (h) => {
      use();
      const c = gpu.createCache(h);
      cacheOwner.set(c, h);
      return c;
    },
    cacheLength: (c) => gpu.cacheLength(c),
    cacheTruncate: (c: CacheHandle, n) => gpu.cacheTruncate(c, n),
    extend: (h, caches, tokens, counts, logits) =>
      onDevice(h, false, () => gpu.extend(h, caches, tokens, counts, logits)),
    extendResident: (h, caches, tokens, counts) =>
      onDevice(h, false, () => gpu.extend(h, caches, tokens, counts, undefined)),
    // The device has no panel copy: invariant decode is the plain device extend. Each row is computed
    // on its own, but cuBLASLt may pick another kernel for another batch size, so bit-identical
    // logits across batch sizes hold only on the fallback GEMM (AGENTRL_GPU_GEMM=fallback).
    extendInvariant: (h, caches, tokens, counts, logits, hidden) => {
      if (hidden !== undefined) {
        throw new EngineError(
          'NATIVE_FAILURE',
          `extendInvariant's hidden output is not available on ${device} yet`,
        );
      }
      onDevice(h, false, () => gpu.extend(h, caches, tokens, counts, logits));
    },
    packForDecode: () => false,
    sample: (h, params) => {
      use();
      return gpu.sample(h, params);
    },
    policyLoss: (h, args) => onDevice(h, true, () => gpu.policyLoss(h, args)),
    gemmPath: () => gpu.gemmPath(nativeName(device)),
    transfers: () => gpu.transfers(nativeName(device)),
    setThreads: () => 1,
    reduceSetup: (h, comm, buckets, exact) =>
      onDevice(h, true, () =>
        gpu.reduceSetup(
          h,
          comm,
          Float64Array.from(buckets, (b) => b.start),
          Float64Array.from(buckets, (b) => b.end),
          Int32Array.from(buckets, (b) => b.stage),
          exact,
        ),
      ),
    reduceAccumulate: (h) => onDevice(h, true, () => gpu.reduceAccumulate(h)),
    reduceArm: (h) => onDevice(h, false, () => gpu.reduceArm(h)),
    reduceFinish: (h) => onDevice(h, true, () => gpu.reduceFinish(h)),
  };
}

/** True when `binding` is a device model's binding (it has sample / policyLoss on the device). */
export function isDeviceBinding(binding: EngineBinding): binding is DeviceEngineBinding {
  return (binding as Partial<DeviceEngineBinding>).device !== undefined && binding.backend !== 'cpu';
}

function deviceBindingOf(model: Model, what: string): DeviceEngineBinding {
  if (!isDeviceBinding(model.native)) {
    throw new EngineError(
      'NATIVE_FAILURE',
      `${what} runs on a cuda or rocm model; this model is on ${model.device}`,
    );
  }
  return model.native;
}

/**
 * One token per sequence of the model's latest `extend` (rows in the extend's order), drawn on the
 * device with the CPU engine's sampleToken rules (temperature, top-k, top-p; see
 * native/src/engine/cuda/sampling.cu): the logits stay on the device, only the tokens and their
 * logprobs (under softmax(logits / temperature), not renormalised over the kept set) come back.
 * Each row's `uniform` is the next draw of that request's own random stream, so a request's tokens
 * do not depend on the batch it shares or its place in it.
 */
export function sampleOnDevice(
  model: Model,
  rows: readonly DeviceSampleRow[],
): { tokens: Int32Array; logprobs: Float64Array } {
  const params = new Float64Array(rows.length * 4);
  rows.forEach((r, i) => {
    if (!(r.temperature >= 0) || !(r.topP > 0 && r.topP <= 1) || !Number.isInteger(r.topK)) {
      throw new EngineError(
        'INVALID_REQUEST',
        `row ${i}: temperature must be >= 0, topK an integer and topP in (0, 1]; got ${r.temperature}, ${r.topK}, ${r.topP}`,
      );
    }
    if (!(r.uniform >= 0 && r.uniform < 1)) {
      throw new EngineError('INVALID_REQUEST', `row ${i}: uniform must be in [0, 1); got ${r.uniform}`);
    }
    params.set([r.temperature, r.topK, r.topP, r.uniform], i * 4);
  });
  const out = deviceBindingOf(model, 'sampleOnDevice').sample(model.handle, params);
  const tokens = new Int32Array(rows.length);
  const logprobs = new Float64Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    tokens[i] = out[i * 2] ?? 0;
    logprobs[i] = out[i * 2 + 1] ?? 0;
  }
  return { tokens, logprobs };
}

/** Bytes a device model's GPU object has copied each way, and its allocations, so far (to check what a step moves). */
export function deviceTransfers(model: Model): DeviceTransfers {
  return deviceBindingOf(model, 'deviceTransfers').transfers();
}

/**
 * The fused-linear GRPO-RoC policy loss on the latest forwardHidden of a device model, and its
 * backward through the whole model (gradients accumulate): hidden states and logits never leave
 * the device. The arguments are those of @agentrl/kernels' fusedLinearPolicyLoss without hidden /
 * weight (the model's own); `logp` (and `entropy` when config.entropy) are filled in.
 */
export function devicePolicyLoss(model: Model, args: DevicePolicyLossArgs): DevicePolicyLossMetrics {
  return deviceBindingOf(model, 'devicePolicyLoss').policyLoss(model.handle, args);
}

/** Which matrix-product path a device model's GEMMs take here ("cublasLt", "hipblasLt", "fallback kernel (...)"). */
export function deviceGemmPath(model: Model): string {
  return deviceBindingOf(model, 'deviceGemmPath').gemmPath();
}
