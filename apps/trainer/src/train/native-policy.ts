import {
  type AdamW,
  createAdamW,
  createModel,
  devicePolicyLoss,
  hasOptimizerState,
  loadModel,
  loadOptimizerState,
  type Model,
  packSequences,
  saveModel,
  saveOptimizerState,
} from '@agentrl/engine';
import type { MicroBatch } from '@agentrl/grpo';
import { fusedLinearPolicyLoss, nativePolicyLossConfig, parsePolicyLossConfig } from '@agentrl/kernels';
import { createCommunicator, DistError, DistErrorCode, runMicroBatches } from '@agentrl/parallel';
import { hashSeed } from '@agentrl/protocol';
import type { TrainConfig } from '../config/schema.js';
import { TrainerError } from '../errors.js';
import { type StepTotals, stepTotals } from './distributed-rollout.js';
import { maxAbsDiffMasked } from './on-policy.js';
import type { MaskedSequence, PolicyLossOptions, PolicyStepMetrics, TrainablePolicy } from './policy.js';
import { assertTokenizerFits, copyTokenizerFiles, type RunTokenizer } from './tokenizer-source.js';

/**
 * Checkpoints and synced weights are written in fp32 whatever dtype the run was initialised from: the
 * trainer's master weights are fp32, so a bf16 save would round them and a resume would not continue
 * the run bit for bit (nor would a server's logprobs match the trainer's after a sync).
 */
const SAVE_DTYPE = { dtype: 'float32' } as const;

/** The HF config.json of the configured tiny model (Qwen3 layout: q/k norm, GQA, tied embeddings). */
export function hfConfigFor(cfg: TrainConfig, vocabSize: number, eosTokenId: number) {
  const m = cfg.model;
  return {
    architectures: [m.architecture === 'llama' ? 'LlamaForCausalLM' : 'Qwen3ForCausalLM'],
    model_type: m.architecture,
    vocab_size: vocabSize,
    hidden_size: m.hiddenSize,
    intermediate_size: m.intermediateSize,
    num_hidden_layers: m.numLayers,
    num_attention_heads: m.numHeads,
    num_key_value_heads: m.numKvHeads,
    max_position_embeddings: m.maxPositions,
    rope_theta: m.ropeTheta,
    initializer_range: m.initStd ?? 0.8 / Math.sqrt(m.hiddenSize),
    tie_word_embeddings: m.tieEmbeddings,
    eos_token_id: eosTokenId,
  };
}

/** Sets every query and key RMSNorm gain of a fresh model (no-op for a layout without them). */
function setQkNormGain(model: Model, gain: number): void {
  for (const p of model.parameters()) {
    if (/\.(q|k)_norm\.weight$/.test(p.name)) p.data.fill(gain);
  }
  model.markWeightsChanged();
}

/**
 * The trainable side of the native engine: one Model whose weights the in-process generator samples
 * from (so the weight sync after an update is the version bump AdamW does), an AdamW per phase (SFT
 * then RL, moments reset between them), masked cross-entropy for SFT and the fused-linear GRPO loss
 * of @agentrl/kernels for RL. With `device: cuda | rocm` the model lives on that GPU: the SFT
 * cross-entropy and the fused-linear loss (engine's devicePolicyLoss) run there on hidden states
 * that never leave the device, the generator's KV-cache decode and its sampling too, and saves read
 * the fp32 master weights back from the device. `precision: bf16` rounds the matrix products'
 * inputs to bf16 (fp32 accumulation, fp32 master weights).
 */
export class NativeTrainer implements TrainablePolicy {
  private phase: 'sft' | 'rl' = 'sft';
  /** null on a model opened for eval (`trainable: false`): no gradients, no Adam moments */
  private adamw: AdamW | null;

  private constructor(
    readonly model: Model,
    private readonly cfg: TrainConfig,
    private readonly tokenizerDir: string | null,
  ) {
    this.adamw = model.training ? this.makeOptimizer('sft') : null;
  }

  /**
   * A fresh model (seeded init) or one loaded from `initDir`; with `resumePhase`, the optimizer state
   * saved beside the weights is restored into that phase's optimizer. `trainable: false` (eval)
   * opens the weights alone: no gradients, no Adam moments, and no step or save.
   */
  static async create(
    cfg: TrainConfig,
    opts: {
      initDir: string | null;
      tokenizer: RunTokenizer;
      resumePhase?: 'sft' | 'rl';
      trainable?: boolean;
    },
  ): Promise<NativeTrainer> {
    const tok = opts.tokenizer.tokenizer;
    const training = opts.trainable ?? true;
    const device = cfg.device;
    const precision = cfg.precision;
    const model = opts.initDir
      ? await loadModel(opts.initDir, { training, device, precision })
      : createModel(hfConfigFor(cfg, tok.vocabSize, tok.eosTokenId), {
          seed: hashSeed(cfg.seed, 'init'),
          training,
          device,
          precision,
        });
    if (!opts.initDir && cfg.model.qkNormInit !== 1) setQkNormGain(model, cfg.model.qkNormInit);
    assertTokenizerFits(opts.tokenizer, model.config.vocab_size, opts.initDir);
    const t = new NativeTrainer(model, cfg, opts.tokenizer.dir);
    if (training && opts.resumePhase && opts.initDir && hasOptimizerState(opts.initDir)) {
      if (opts.resumePhase === 'rl') t.startRl();
      await loadOptimizerState(t.optimizer, opts.initDir);
    }
    return t;
  }

  private makeOptimizer(phase: 'sft' | 'rl'): AdamW {
    const { sft, rl } = this.cfg;
    return phase === 'sft'
      ? createAdamW(this.model, {
          lr: sft.lr,
          warmupSteps: sft.warmupSteps,
          schedule: 'cosine',
          totalSteps: Math.max(1, sft.steps),
          minLrRatio: 0.1,
          weightDecay: 0,
          beta2: sft.beta2,
          maxGradNorm: rl.gradClip,
        })
      : createAdamW(this.model, {
          lr: rl.lr,
          warmupSteps: rl.warmupSteps,
          schedule: 'constant',
          weightDecay: rl.weightDecay,
          maxGradNorm: rl.gradClip,
          beta2: rl.beta2,
        });
  }

  /** Switches to the RL optimizer with fresh moments (SFT's moments would bias the first RL steps). */
  startRl(): void {
    if (this.phase === 'rl') return;
    this.phase = 'rl';
    this.adamw = this.makeOptimizer('rl');
    this.adamw.reset(); // the moments live in the model: zero SFT's in place
  }

  private get optimizer(): AdamW {
    if (!this.adamw)
      throw new TrainerError(
        'USAGE',
        'this policy was opened for eval (trainable: false): it has no gradients or optimizer to step or save',
      );
    return this.adamw;
  }

  get currentPhase() {
    return this.phase;
  }

  /**
   * One SFT optimizer step: masked cross-entropy over micro-batches, normalised by all targets.
   * Under mpirun every rank draws the same batch and runs its share of the micro-batches.
   */
  sftStep(batch: readonly MaskedSequence[]): { loss: number; gradNorm: number; tokens: number; lr: number } {
    const optimizer = this.optimizer;
    const targets = batch.reduce((n, s) => n + countTargets(s.lossMask), 0);
    const groups = chunkByTokens(batch, this.cfg.rl.microBatchTokens);
    const rows = runMicroBatches(
      {
        comm: createCommunicator(),
        model: this.model,
        count: groups.length,
        width: 1,
        reduce: this.reduceOptions,
      },
      (i) => {
        const group = groups[i]!;
        const packed = packSequences(group.map((s) => s.tokenIds));
        const mask = new Uint8Array(packed.tokenIds.length);
        let at = 0;
        for (const s of group) {
          mask.set(s.lossMask, at);
          at += s.tokenIds.length;
        }
        return [this.model.sftLoss(packed, mask, { normalizer: Math.max(1, targets) }).lossSum];
      },
    );
    const lossSum = rows.reduce((a, b) => a + b, 0);
    const r = optimizer.step();
    return { loss: lossSum / Math.max(1, targets), gradNorm: r.gradNorm, tokens: targets, lr: r.lr };
  }

  /**
   * One GRPO update: fused-linear policy loss per micro-batch, gradients accumulated, one AdamW
   * step. On the CPU the loss is @agentrl/kernels' fusedLinearPolicyLoss then the model's backward;
   * on a GPU model the engine's devicePolicyLoss does both on the device (no [T, V] logits, no
   * hidden-state gradient crossing to the host). Under mpirun every rank holds the same
   * micro-batches (advantages and RoC were decided per group before), runs micro-batches
   * i % size === rank normalised by the global token count, and the gradients are all-reduced, so
   * the update is the single-process one (@agentrl/parallel: float64 over MPI on CPU ranks, NCCL /
   * RCCL on the device for GPU ranks). With `--engine` a
   * rank holds only its own micro-batches (holes elsewhere) and `totals` gives the step's normalisers.
   */
  policyStep(
    microBatches: readonly (MicroBatch | undefined)[],
    opts: PolicyLossOptions,
    totals?: StepTotals,
  ): PolicyStepMetrics {
    const optimizer = this.optimizer;
    const shifted = microBatches.map((mb) => mb && shiftForNextToken(mb));
    const { tokenCount, seqCount } = totals ?? stepTotals(microBatches as MicroBatch[]);
    const lossOptions = {
      temperature: opts.temperature,
      clipLow: opts.clipLow,
      clipHigh: opts.clipHigh,
      dualClip: opts.dualClip,
      aggregation: opts.aggregation,
      tokenCount,
      seqCount,
      horizon: this.cfg.rl.stages.reduce((m, st) => Math.max(m, st.maxResponseTokens), 1),
    };
    const lossOf = this.model.device === 'cpu' ? this.hostLoss(lossOptions) : this.deviceLoss(lossOptions);
    const reduce = this.reduceOptions;
    // per micro-batch: loss, clipFracLow, clipFracHigh, approxKl (token-weighted), logprob max |diff|
    const rows = runMicroBatches(
      { comm: createCommunicator(), model: this.model, count: microBatches.length, width: 5, reduce },
      (i) => {
        const mb = microBatches[i];
        const s = shifted[i];
        if (!mb || !s)
          throw new DistError(
            DistErrorCode.MISMATCH,
            `micro-batch ${i} of ${microBatches.length} is not on this rank, but runMicroBatches gives it to this rank; rank 0 must deal micro-batch i to rank i % size`,
          );
        if (s.count === 0) return undefined;
        const r = lossOf(mb, s);
        const diff = maxAbsDiffMasked(s.oldLogprobs, r.logprobs, s.lossMask);
        const w = r.metrics.tokens / Math.max(1, tokenCount);
        return [r.loss, r.metrics.clipFracLow * w, r.metrics.clipFracHigh * w, r.metrics.approxKl * w, diff];
      },
    );
    let loss = 0;
    const acc = { clipFracLow: 0, clipFracHigh: 0, approxKl: 0, rolloutTrainLogprobMaxAbsDiff: 0 };
    for (let i = 0; i < microBatches.length; i++) {
      loss += rows[i * 5]!;
      acc.clipFracLow += rows[i * 5 + 1]!;
      acc.clipFracHigh += rows[i * 5 + 2]!;
      acc.approxKl += rows[i * 5 + 3]!;
      acc.rolloutTrainLogprobMaxAbsDiff = Math.max(acc.rolloutTrainLogprobMaxAbsDiff, rows[i * 5 + 4]!);
    }
    const step = optimizer.step();
    return { loss, gradNorm: step.gradNorm, trainTokens: tokenCount, lr: step.lr, ...acc };
  }

  /** Buckets and overlap of the data-parallel gradient all-reduce (config `parallel`). */
  private get reduceOptions() {
    const p = this.cfg.parallel;
    return { bucketBytes: Math.round(p.bucketMb * 1024 * 1024), overlap: p.overlap, exact: p.exact };
  }

  /** The CPU micro-batch loss: forward, fused-linear loss on the host, backward. */
  private hostLoss(options: MicroBatchLossOptions): MicroBatchLoss {
    const H = this.model.shape.hidden;
    const V = this.model.shape.vocab;
    // fused-linear adds each micro-batch's lm_head gradient into the model's own buffer: no [V, H]
    // array per micro-batch (2.3 GiB at V = 151,936, H = 4096)
    const dLmHead = this.model.lmHeadGrad();
    return (mb, s) => {
      const { hidden } = this.model.forwardHidden({ tokenIds: mb.tokenIds, cuSeqlens: mb.cuSeqlens });
      const r = fusedLinearPolicyLoss(
        {
          hidden,
          weight: this.model.lmHeadWeight(),
          hiddenSize: H,
          vocabSize: V,
          targets: s.targets,
          oldLogprobs: s.oldLogprobs,
          advantages: s.advantages,
          lossMask: s.lossMask,
          cuSeqlens: mb.cuSeqlens,
        },
        { ...options, dWeightOut: dLmHead, accumulate: true },
      );
      this.model.backwardFromHidden(r.dHidden);
      return r;
    };
  }

  /** The GPU micro-batch loss: forward, then devicePolicyLoss (loss and backward on the device). */
  private deviceLoss(options: MicroBatchLossOptions): MicroBatchLoss {
    const config = { ...nativePolicyLossConfig(parsePolicyLossConfig(options)) };
    return (mb, s) => {
      // The hidden states stay on the device: the loss reads them there, only logp comes back.
      this.model.forward({ tokenIds: mb.tokenIds, cuSeqlens: mb.cuSeqlens });
      const logprobs = new Float32Array(mb.tokenIds.length);
      const { loss, ...metrics } = devicePolicyLoss(this.model, {
        config,
        targets: s.targets,
        oldLogprobs: s.oldLogprobs,
        advantages: s.advantages,
        lossMask: s.lossMask,
        cuSeqlens: mb.cuSeqlens,
        logp: logprobs,
      });
      return { loss, metrics, logprobs };
    };
  }

  /** The weights alone as an HF checkpoint (what a server loads on a weight sync). */
  async saveWeights(dir: string): Promise<void> {
    await saveModel(this.model, dir, SAVE_DTYPE);
    copyTokenizerFiles(this.tokenizerDir, dir);
  }

  /**
   * A resumable HF checkpoint (fp32 weights, config.json, the tokenizer files of an HF tokenizer) +
   * optimizer state; past `maxShardBytes` (default 5 GB) both are sharded as save_pretrained shards.
   */
  async save(dir: string, options: { maxShardBytes?: number } = {}): Promise<void> {
    await saveModel(this.model, dir, { ...SAVE_DTYPE, ...options });
    await saveOptimizerState(this.optimizer, dir, options);
    copyTokenizerFiles(this.tokenizerDir, dir);
  }
}

type MicroBatchLossOptions = PolicyLossOptions & { tokenCount: number; seqCount: number; horizon: number };

/** One micro-batch's policy loss (its gradients accumulated into the model) and what it reports. */
type MicroBatchLoss = (
  mb: MicroBatch,
  s: ReturnType<typeof shiftForNextToken>,
) => {
  loss: number;
  logprobs: ArrayLike<number>;
  metrics: { tokens: number; clipFracLow: number; clipFracHigh: number; approxKl: number };
};

function countTargets(mask: readonly number[]): number {
  let n = 0;
  for (let t = 1; t < mask.length; t++) if (mask[t]) n++;
  return n;
}

function chunkByTokens<T extends { tokenIds: readonly number[] }>(
  items: readonly T[],
  budget: number,
): T[][] {
  const out: T[][] = [];
  let cur: T[] = [];
  let size = 0;
  for (const it of items) {
    if (cur.length > 0 && size + it.tokenIds.length > budget) {
      out.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(it);
    size += it.tokenIds.length;
  }
  if (cur.length) out.push(cur);
  return out;
}

/**
 * The engine's hidden row t predicts token t+1, while a packed micro-batch stores per token i the
 * logprob/advantage/mask of token i itself. Shift by one inside each sequence; the last row of each
 * sequence predicts nothing (mask 0).
 */
export function shiftForNextToken(mb: MicroBatch) {
  const T = mb.tokenIds.length;
  const targets = new Int32Array(T);
  const oldLogprobs = new Float32Array(T);
  const advantages = new Float32Array(T);
  const lossMask = new Uint8Array(T);
  let count = 0;
  for (let s = 0; s + 1 < mb.cuSeqlens.length; s++) {
    const end = mb.cuSeqlens[s + 1]!;
    for (let t = mb.cuSeqlens[s]!; t + 1 < end; t++) {
      targets[t] = mb.tokenIds[t + 1]!;
      if (mb.lossMask[t + 1]) {
        lossMask[t] = 1;
        oldLogprobs[t] = mb.oldLogprobs[t + 1]!;
        advantages[t] = mb.advantages[t + 1]!;
        count++;
      }
    }
  }
  return { targets, oldLogprobs, advantages, lossMask, count };
}
