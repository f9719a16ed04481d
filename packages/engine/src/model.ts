import { type PackedBatch, validateBatch } from './batch.js';
import {
  type ModelConfig,
  type ModelConfigInput,
  type ModelDtype,
  modelDtype,
  type NativeModelConfig,
  parseModelConfig,
  toNativeConfig,
} from './config.js';
import {
  bindingForDevice,
  type Device,
  type DeviceEngineBinding,
  type DeviceOptions,
  type DevicePrecision,
  type DeviceReduceBucket,
  isDeviceBinding,
} from './device.js';
import { EngineError } from './errors.js';
import type { EngineBinding, ModelHandle } from './native.js';

/**
 * One named parameter tensor: `data` and `grad` are live views of the engine's buffers (`grad` is
 * empty on a model opened with `training: false`, until `enableTraining()`).
 */
export interface Parameter {
  name: string;
  shape: number[];
  data: Float32Array;
  grad: Float32Array;
}

/** Whether a model gets gradient buffers: false for eval and serving (weights only). */
export interface ModelMemoryOptions {
  /** Allocate gradients (default true). AdamW moments are allocated only when an optimizer needs them. */
  training?: boolean;
}

/** Bytes a model holds natively, per kind. */
export interface ModelMemory {
  params: number;
  grads: number;
  /** AdamW first and second moments */
  optimizer: number;
}

export interface ForwardOptions {
  /** Keep only each layer's input and recompute the rest during the backward (less memory, ~1.3x time). */
  recompute?: boolean;
}

export interface SftLossOptions extends ForwardOptions {
  /** Divide the loss sum by this (e.g. the target count of the whole accumulated batch); default: this batch's count. */
  normalizer?: number;
}

export interface SftLossResult {
  /** loss sum / normalizer */
  loss: number;
  lossSum: number;
  numTargets: number;
}

export interface CreateModelOptions extends ModelMemoryOptions, DeviceOptions {
  /** Seed of the normal(0, initializer_range) init; the same seed gives the same weights. */
  seed?: number;
}

/**
 * A Llama / Qwen2 / Qwen3 decoder on the native backend. Weights (fp32 master copy, whatever the
 * checkpoint's dtype), gradients and AdamW moments live in native buffers; `parameters()` exposes
 * them as Float32Array views (CPU backend: zero-copy). A model opened with `training: false` has no
 * gradients and no moments. One training forward is in flight at a time: `backwardFromHidden`
 * consumes the latest forward.
 */
export class Model {
  readonly config: ModelConfig;
  readonly shape: NativeModelConfig;
  /** The checkpoint dtype (`dtype` / `torch_dtype` of config.json; float32 when absent): what saveModel writes by default. */
  readonly dtype: ModelDtype;
  /** Number of trainable scalars. */
  readonly numParameters: number;
  /** Bumped whenever the weights change (optimizer step, load): KV caches of older versions are stale. */
  version = 0;
  /** @internal */
  readonly handle: ModelHandle;
  /** @internal */
  readonly native: EngineBinding;
  /** Where parameters, gradients, optimizer state and activations live (device.ts). */
  readonly device: Device;
  /** The matrix products' precision on the device (always fp32 on the cpu). */
  readonly precision: DevicePrecision;
  private readonly params: Parameter[];
  private readonly byName = new Map<string, Parameter>();
  private readonly layout: readonly { offset: number; numel: number }[];
  private readonly flat: {
    params: Float32Array;
    grads: Float32Array | undefined;
    moments: { m: Float32Array; v: Float32Array } | undefined;
  };
  private gradientsDone: ((stage: number) => void) | undefined;
  private forwardTokens: Int32Array | undefined;
  private forwardCu: Int32Array | undefined;

  /** @internal use createModel / loadModel */
  constructor(config: ModelConfig, options: ModelMemoryOptions & DeviceOptions = {}) {
    this.config = config;
    this.shape = toNativeConfig(config);
    this.dtype = modelDtype(config);
    this.device = options.device ?? 'cpu';
    this.native = bindingForDevice(options);
    this.precision = options.precision ?? 'fp32';
    const created = this.native.createModel({ ...this.shape, training: options.training ?? true });
    this.handle = created.handle;
    const buffers = this.native.buffers(this.handle);
    this.flat = {
      params: new Float32Array(buffers.params),
      grads: buffers.grads ? new Float32Array(buffers.grads) : undefined,
      moments: undefined,
    };
    this.layout = created.tensors;
    const empty = new Float32Array(0);
    const grads = this.flat.grads;
    this.params = created.tensors.map((t) => ({
      name: t.name,
      shape: t.shape,
      data: this.flat.params.subarray(t.offset, t.offset + t.numel),
      grad: grads ? grads.subarray(t.offset, t.offset + t.numel) : empty,
    }));
    for (const p of this.params) this.byName.set(p.name, p);
    this.numParameters = this.params.reduce((n, p) => n + p.data.length, 0);
  }

  /** Whether this model has gradient buffers (see `ModelMemoryOptions.training`). */
  get training(): boolean {
    return this.flat.grads !== undefined;
  }

  /** Allocates (zeroed) gradients for a model opened with `training: false`; a no-op otherwise. */
  enableTraining(): void {
    if (this.flat.grads) return;
    const grads = new Float32Array(this.native.enableTraining(this.handle));
    this.flat.grads = grads;
    this.params.forEach((p, i) => {
      const t = this.layout[i] as { offset: number; numel: number };
      p.grad = grads.subarray(t.offset, t.offset + t.numel);
    });
  }

  /** Bytes held natively for weights, gradients and optimizer moments. */
  memoryBytes(): ModelMemory {
    return this.native.memoryBytes(this.handle);
  }

  /** Every parameter in HF order with live data/grad views. */
  parameters(): readonly Parameter[] {
    this.native.beforeHostAccess?.(this.handle);
    return this.params;
  }

  /** The parameter with this HF name, or undefined. */
  parameter(name: string): Parameter | undefined {
    this.native.beforeHostAccess?.(this.handle);
    return this.byName.get(name);
  }

  /** The lm_head weight [V, H] as a live view (the embedding matrix when tied). */
  lmHeadWeight(): Float32Array {
    this.native.beforeHostAccess?.(this.handle);
    const p = this.byName.get(this.shape.tied ? 'model.embed_tokens.weight' : 'lm_head.weight');
    if (!p) throw new EngineError('NATIVE_FAILURE', 'lm_head weight missing from the layout');
    return p.data;
  }

  /**
   * The lm_head gradient [V, H] as a live view (the embedding's when tied): pass it to the
   * fused-linear loss as `dWeightOut` with `accumulate: true` so micro-batches add into the model's
   * gradient in place, with no [V, H] buffer per micro-batch.
   */
  lmHeadGrad(): Float32Array {
    this.native.beforeHostAccess?.(this.handle);
    const p = this.byName.get(this.shape.tied ? 'model.embed_tokens.weight' : 'lm_head.weight');
    if (!p) throw new EngineError('NATIVE_FAILURE', 'lm_head weight missing from the layout');
    this.requireTraining('lmHeadGrad');
    return p.grad;
  }

  /**
   * The AdamW first and second moments (flat, in layout order) as live views, allocated (zeroed)
   * on the first call. @internal
   */
  adamMoments(): { m: Float32Array; v: Float32Array } {
    this.native.beforeHostAccess?.(this.handle);
    if (!this.flat.moments) {
      this.requireTraining('an optimizer');
      const b = this.native.optimizerBuffers(this.handle);
      this.flat.moments = { m: new Float32Array(b.adamM), v: new Float32Array(b.adamV) };
    }
    return this.flat.moments;
  }

  /** The native tensor layout: each parameter's float offset and length in the flat buffers. @internal */
  tensorLayout(): readonly { offset: number; numel: number }[] {
    return this.layout;
  }

  /**
   * Training forward over a packed batch whose hidden states stay native: on a GPU device nothing
   * [T, H] is copied to the host (a loss computed there next: sftLoss, the engine's
   * devicePolicyLoss). The latest forward for backwardFromHidden / the losses, as forwardHidden.
   */
  forward(batch: PackedBatch, options: ForwardOptions = {}): { numTokens: number } {
    validateBatch(batch, this.shape.vocab, this.shape.maxPositions);
    const recompute = options.recompute ?? false;
    if (isDeviceBinding(this.native)) {
      this.native.forwardResident(this.handle, batch.tokenIds, batch.cuSeqlens, recompute);
    } else {
      this.native.forward(this.handle, batch.tokenIds, batch.cuSeqlens, recompute);
    }
    this.forwardTokens = batch.tokenIds;
    this.forwardCu = batch.cuSeqlens;
    return { numTokens: batch.tokenIds.length };
  }

  /**
   * Training forward over a packed batch. Returns the final-norm hidden states [T, H] (row t predicts
   * token t+1 of its sequence) for a loss computed outside (e.g. the fused-linear policy loss).
   */
  forwardHidden(
    batch: PackedBatch,
    options: ForwardOptions = {},
  ): { hidden: Float32Array; numTokens: number; hiddenSize: number } {
    validateBatch(batch, this.shape.vocab, this.shape.maxPositions);
    const hidden = this.native.forward(
      this.handle,
      batch.tokenIds,
      batch.cuSeqlens,
      options.recompute ?? false,
    );
    this.forwardTokens = batch.tokenIds;
    this.forwardCu = batch.cuSeqlens;
    return { hidden, numTokens: batch.tokenIds.length, hiddenSize: this.shape.hidden };
  }

  /**
   * Backward of the latest forwardHidden: accumulates (adds) parameter gradients from dHidden [T, H]
   * and, when given, dLmHead [V, H] into the lm_head gradient (the embedding's when tied).
   */
  backwardFromHidden(dHidden: Float32Array, options: { dLmHead?: Float32Array } = {}): void {
    this.requireTraining('backwardFromHidden');
    const tokens = this.requireForward();
    const expected = tokens.length * this.shape.hidden;
    if (!(dHidden instanceof Float32Array) || dHidden.length !== expected) {
      throw new EngineError('INVALID_BATCH', `dHidden must be a Float32Array of ${expected} floats ([T, H])`);
    }
    const dLm = options.dLmHead;
    if (
      dLm !== undefined &&
      (!(dLm instanceof Float32Array) || dLm.length !== this.shape.vocab * this.shape.hidden)
    ) {
      throw new EngineError(
        'INVALID_BATCH',
        `dLmHead must be a Float32Array of ${this.shape.vocab * this.shape.hidden} floats ([V, H])`,
      );
    }
    this.native.backward(this.handle, dHidden, dLm, this.gradientsDone);
  }

  /** Logits [T, V] of a packed batch (also leaves it as the latest forward). */
  forwardLogits(batch: PackedBatch): Float32Array {
    this.forwardHidden(batch);
    const out = new Float32Array(batch.tokenIds.length * this.shape.vocab);
    this.native.logits(this.handle, out);
    return out;
  }

  /**
   * Masked next-token cross-entropy, forward and backward in one call (gradients accumulate).
   * `lossMask[t]` (nonzero) makes token t a target, predicted from t-1 of the same sequence; the
   * first token of a sequence is never a target.
   */
  sftLoss(batch: PackedBatch, lossMask: ArrayLike<number>, options: SftLossOptions = {}): SftLossResult {
    const n = batch.tokenIds.length;
    this.requireTraining('sftLoss');
    if (lossMask.length !== n) {
      throw new EngineError('INVALID_BATCH', `lossMask has ${lossMask.length} entries for ${n} tokens`);
    }
    this.forward(batch, options);
    const targets = new Int32Array(n).fill(-1);
    let count = 0;
    for (let s = 0; s + 1 < batch.cuSeqlens.length; s++) {
      const end = batch.cuSeqlens[s + 1] ?? 0;
      for (let t = (batch.cuSeqlens[s] ?? 0) + 1; t < end; t++) {
        if (lossMask[t]) {
          targets[t - 1] = batch.tokenIds[t] ?? 0;
          count++;
        }
      }
    }
    const normalizer = options.normalizer ?? Math.max(count, 1);
    if (!(normalizer > 0)) throw new EngineError('INVALID_BATCH', 'normalizer must be positive');
    const lossSum = this.native.crossEntropy(this.handle, targets, 1 / normalizer, this.gradientsDone);
    return { loss: lossSum / normalizer, lossSum, numTargets: count };
  }

  /**
   * Has every following backward (backwardFromHidden, sftLoss) call `hook(stage)` as soon as a group
   * of gradients is final, last layer first: stage `numLayers` once the final norm (and an untied
   * lm_head) are, then each layer l down to 0, then -1 once the embedding is (see gradientStage).
   * Data-parallel training starts reducing those gradients while the backward goes on. The hook runs
   * synchronously between layers; what it throws ends the backward. CPU models only: a GPU model
   * ignores it (its backward reports nothing), so a caller must not rely on it being called.
   * `null` removes it.
   */
  setGradientsDoneHook(hook: ((stage: number) => void) | null): void {
    this.gradientsDone = hook ?? undefined;
  }

  /** Whether the backward reports stages to setGradientsDoneHook (the CPU backend does). */
  get reportsGradientStages(): boolean {
    return this.device === 'cpu';
  }

  /**
   * The backward stage after which parameter `name`'s gradient is final (see setGradientsDoneHook):
   * numLayers for the final norm and an untied lm_head, l for model.layers.l.*, -1 for the embedding
   * (and a tied lm_head, which is the embedding).
   */
  gradientStage(name: string): number {
    const layer = /^model\.layers\.(\d+)\./.exec(name);
    if (layer) return Number(layer[1]);
    if (name === 'model.norm.weight' || name === 'lm_head.weight') return this.shape.layers;
    return -1;
  }

  /**
   * Where each parameter's gradient sits in the flat gradient buffer (HF order) and the backward
   * stage after which it is final (gradientStage): what a data-parallel reduce buckets.
   */
  gradientLayout(): { name: string; offset: number; numel: number; stage: number }[] {
    return this.params.map((p, i) => ({
      name: p.name,
      offset: (this.layout[i] as { offset: number }).offset,
      numel: (this.layout[i] as { numel: number }).numel,
      stage: this.gradientStage(p.name),
    }));
  }

  /** Floats in the flat parameter (and gradient) buffer: numParameters plus the alignment padding between tensors. */
  get flatLength(): number {
    return this.flat.params.length;
  }

  /** The GPU this model lives on (DeviceOptions.deviceIndex resolved); -1 on the cpu. */
  get deviceIndex(): number {
    return isDeviceBinding(this.native) ? this.native.deviceIndex : -1;
  }

  /**
   * GPU models: data-parallel gradients reduced on the device by an NCCL / RCCL communicator's
   * handle (@agentrl/parallel's DeviceGradientAllReduce drives these four). `buckets` cover the
   * flat gradient once, in the order they start; `exact` keeps a float64 accumulator (8 bytes per
   * parameter) so that any number of ranks gives the same bits.
   * @internal
   */
  setupDeviceReduce(ncclComm: unknown, buckets: readonly DeviceReduceBucket[], exact: boolean): void {
    this.deviceOnly('setupDeviceReduce').reduceSetup(this.handle, ncclComm, buckets, exact);
  }

  /** @internal exact: adds this micro-batch's gradients into the accumulator and zeroes them. */
  deviceReduceAccumulate(): void {
    this.deviceOnly('deviceReduceAccumulate').reduceAccumulate(this.handle);
  }

  /** @internal the next backward starts each bucket's all-reduce as soon as its stage is done. */
  deviceReduceArm(): void {
    this.deviceOnly('deviceReduceArm').reduceArm(this.handle);
  }

  /** @internal starts the rest, orders the device after them, writes the sums; returns the buckets the backward started. */
  deviceReduceFinish(): number {
    return this.deviceOnly('deviceReduceFinish').reduceFinish(this.handle);
  }

  /** Sets every gradient to zero (nothing to do without gradients). */
  zeroGrad(): void {
    this.native.zeroGrad(this.handle);
  }

  /** Global L2 norm of all gradients (deterministic for any thread count). */
  gradNorm(): number {
    this.requireTraining('gradNorm');
    return Math.sqrt(this.native.gradNormSquared(this.handle));
  }

  /** Bytes of KV cache one token takes in a generator (fp32 keys and values of every layer). */
  kvBytesPerToken(): number {
    return this.shape.layers * 2 * this.shape.kvHeads * this.shape.headDim * 4;
  }

  /** Call after writing weights through parameter views so generators drop stale KV caches. */
  markWeightsChanged(): void {
    this.version++;
  }

  private deviceOnly(what: string): DeviceEngineBinding {
    if (!isDeviceBinding(this.native)) {
      throw new EngineError('NATIVE_FAILURE', `${what} is for GPU models; this one is on the cpu`);
    }
    return this.native;
  }

  private requireTraining(what: string): void {
    if (!this.flat.grads) {
      throw new EngineError(
        'NOT_TRAINING',
        `${what} needs gradients, but this model was opened with training: false; call model.enableTraining() or load it with { training: true }`,
      );
    }
  }

  private requireForward(): Int32Array {
    if (!this.forwardTokens || !this.forwardCu) {
      throw new EngineError('NO_FORWARD', 'backwardFromHidden needs a forwardHidden first');
    }
    return this.forwardTokens;
  }
}

/** A randomly initialised model: normal(0, initializer_range) matrices, unit norms, zero biases. */
export function createModel(config: ModelConfigInput | ModelConfig, options: CreateModelOptions = {}): Model {
  const parsed = parseModelConfig(config);
  const { seed: _seed, ...memory } = options;
  const model = new Model(parsed, memory);
  model.native.initParams(model.handle, options.seed ?? 0, parsed.initializer_range);
  return model;
}

/** A model with all-zero weights of this config (for loaders). */
export function createEmptyModel(
  config: ModelConfig,
  options: ModelMemoryOptions & DeviceOptions = {},
): Model {
  return new Model(config, options);
}
