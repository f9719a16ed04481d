import { loadNative, nativeBuildCommand } from '@agentrl/native';
import type { NativeModelConfig } from './config.js';
import { EngineError } from './errors.js';

/** Opaque native handles. */
export type ModelHandle = { readonly __brand: 'ModelHandle' };
export type CacheHandle = { readonly __brand: 'CacheHandle' };

export interface NativeTensorInfo {
  name: string;
  shape: number[];
  /** offset in floats inside the flat parameter buffer */
  offset: number;
  numel: number;
}

/**
 * The engine's native surface (native/src/engine/bindings.cc). Callers check arguments for clear
 * messages; the native side checks them again (handle kinds by type tag, element types, lengths,
 * counts, finite numbers) and throws an Error with `code` ENGINE_INVALID_ARGUMENT.
 */
export interface EngineBinding {
  backend: string;
  createModel(config: NativeModelConfig & { training: boolean }): {
    handle: ModelHandle;
    tensors: NativeTensorInfo[];
    numFloats: number;
  };
  /** `grads` is undefined for a model created with `training: false`. */
  buffers(handle: ModelHandle): { params: ArrayBuffer; grads: ArrayBuffer | undefined };
  /** Allocates the gradients of a `training: false` model; returns them. */
  enableTraining(handle: ModelHandle): ArrayBuffer;
  /** The AdamW moments, allocated (zeroed) on the first call. */
  optimizerBuffers(handle: ModelHandle): { adamM: ArrayBuffer; adamV: ArrayBuffer };
  memoryBytes(handle: ModelHandle): { params: number; grads: number; optimizer: number };
  initParams(handle: ModelHandle, seed: number, std: number): void;
  forward(handle: ModelHandle, tokens: Int32Array, cu: Int32Array, recompute: boolean): Float32Array;
  /** `onGradientsDone(stage)`: see Model.setGradientsDoneHook (CPU backend only; others ignore it). */
  backward(
    handle: ModelHandle,
    dHidden: Float32Array,
    dLmHead: Float32Array | undefined,
    onGradientsDone?: (stage: number) => void,
  ): void;
  crossEntropy(
    handle: ModelHandle,
    targets: Int32Array,
    scale: number,
    onGradientsDone?: (stage: number) => void,
  ): number;
  logits(handle: ModelHandle, out: Float32Array): void;
  zeroGrad(handle: ModelHandle): void;
  gradNormSquared(handle: ModelHandle): number;
  adamw(
    handle: ModelHandle,
    lr: number,
    beta1: number,
    beta2: number,
    eps: number,
    weightDecay: number,
    step: number,
    gradScale: number,
  ): void;
  createCache(handle: ModelHandle): CacheHandle;
  cacheLength(cache: CacheHandle): number;
  cacheTruncate(cache: CacheHandle, length: number): void;
  extend(
    handle: ModelHandle,
    caches: CacheHandle[],
    tokens: Int32Array,
    counts: Int32Array,
    logits: Float32Array,
  ): void;
  /** extend on the panel copy of the weights: bit-identical per sequence whatever the batch. */
  extendInvariant(
    handle: ModelHandle,
    caches: CacheHandle[],
    tokens: Int32Array,
    counts: Int32Array,
    logits: Float32Array,
    hidden?: Float32Array,
  ): void;
  /** (Re)packs the panel copy of the weights unless it holds this weights version; true if it packed. */
  packForDecode(handle: ModelHandle, weightsVersion: number): boolean;
  setThreads(n: number): number;
  /** Device models only (device.ts): called before JS reads or writes the host views. */
  beforeHostAccess?(handle: ModelHandle): void;
}

/**
 * The addon's product entries for tests and benches (native/src/engine/bench.cc), on the active CPU
 * kernel path: `gemm` the packed Sgemm (or SgemmSmallM), `packPanels` / `panelGemm` decode's panel
 * copy and product. Not used by the engine itself.
 */
export interface ProductEntries {
  gemm(
    transA: boolean,
    transB: boolean,
    m: number,
    n: number,
    k: number,
    alpha: number,
    a: Float32Array,
    b: Float32Array,
    beta: number,
    c: Float32Array,
    smallM: boolean,
  ): Float32Array;
  /** The [n, k] weight's panel copy, 64-byte aligned. */
  packPanels(w: Float32Array, n: number, k: number): Float32Array;
  panelGemm(
    m: number,
    n: number,
    k: number,
    a: Float32Array,
    w: Float32Array,
    panels: Float32Array,
    c: Float32Array,
    accumulate: boolean,
  ): Float32Array;
}

/** engineBinding's product entries (ProductEntries). */
export const productEntries = (): ProductEntries => engineBinding() as unknown as ProductEntries;

let binding: EngineBinding | undefined;

/** The engine component of the one agentrl addon; throws an actionable error when it is missing. */
export function engineBinding(): EngineBinding {
  if (binding) return binding;
  const addon = loadNative();
  const engine = addon.engine as EngineBinding | undefined;
  if (!engine) {
    throw new EngineError(
      'NATIVE_FAILURE',
      `the native addon has no "engine" component (it has: ${addon.modules().join(', ')}); rebuild it: ${nativeBuildCommand()}`,
    );
  }
  binding = engine;
  return engine;
}

/** Sets the number of OpenMP threads the CPU backend uses; returns the number now in effect. */
export function setEngineThreads(n: number): number {
  return engineBinding().setThreads(n);
}

/**
 * The O(vocabulary) loops of sampleToken (sampling.ts). The addon's (native/src/engine/
 * sampler_bindings.cc) are the bit-exact twins of the float64 JavaScript in sampling-reference.ts
 * (jsSamplerLoops), which the tests and the bench run beside them.
 */
export interface SamplerLoops {
  /** probs[i] = exp(logits[i] / t - max / t) (t > 0), their id-order sum, the max and the argmax. */
  temperedProbs(
    logits: Float32Array,
    t: number,
    probs: Float64Array,
  ): { sum: number; max: number; argmax: number };
  /** The first i < n where r - probs[0] - ... - probs[i] <= 0, or -1. */
  drawInIdOrder(probs: Float64Array, n: number, r: number): number;
  /** Copies probs[i] >= tau (i < n) in id order into values; their count and id-order sum. */
  collectAtLeast(
    probs: Float64Array,
    n: number,
    tau: number,
    values: Float64Array,
  ): { n: number; mass: number };
  /** The id of the rank-th (from 0) of probs[0..n) equal to p, or -1. */
  nthEqual(probs: Float64Array, n: number, p: number, rank: number): number;
}

/** The native sampler loops, plus the exp they use (its own test surface). Rows are checked natively too. */
export interface SamplerBinding extends SamplerLoops {
  /** out[i] = Math.exp(x[i]) bit for bit, on the active CPU kernel level. */
  expF64(x: Float64Array, out: Float64Array): void;
}

/**
 * The training step's element-wise kernels (native/src/engine/cpu/elementwise.cc) beside the loops
 * they replaced (`reference`: compiled as model.cc is, glibc's expf per element). Test surface.
 * @internal
 */
export interface ElementwiseTestBinding {
  /** out[i] = expf(x[i]): the active level's kernel, or glibc's std::exp when `libm`. */
  expF32(x: Float32Array, out: Float32Array, libm: boolean): void;
  /** act = g * sigmoid(g) * u. */
  swiglu(g: Float32Array, u: Float32Array, act: Float32Array, reference: boolean): void;
  /** dg holds da on entry; writes dg and du. */
  swigluBackward(
    g: Float32Array,
    u: Float32Array,
    dg: Float32Array,
    du: Float32Array,
    reference: boolean,
  ): void;
  /** Returns logsumexp(z) - z[target]; z becomes (softmax(z) - onehot) * scale. */
  softmaxXentRow(z: Float32Array, target: number, scale: number, reference: boolean): number;
}

/** The element-wise kernels' test surface on the CPU engine component. @internal */
export function elementwiseTestBinding(): ElementwiseTestBinding {
  return samplerBinding() as unknown as ElementwiseTestBinding;
}

let sampler: SamplerBinding | undefined;

/** The sampler's loops on the CPU engine component; throws the engine's actionable error when missing. */
export function samplerBinding(): SamplerBinding {
  if (sampler) return sampler;
  const engine = engineBinding() as EngineBinding & Partial<SamplerBinding>;
  if (typeof engine.temperedProbs !== 'function') {
    throw new EngineError(
      'NATIVE_FAILURE',
      `the native addon's engine predates the native sampler (it has no temperedProbs); rebuild it: ${nativeBuildCommand()}`,
    );
  }
  sampler = engine as SamplerBinding;
  return sampler;
}
