import { loadNative, NativeLoadError, nativeBuildCommand } from '@agentrl/native';
import type { PolicyLossConfig } from '../config.js';
import { KernelError, KernelErrorCode } from '../errors.js';
import type { PolicyLossMetrics } from '../types.js';

/** The config as the C++ side reads it (numbers only). */
export interface NativeConfig {
  temperature: number;
  clipLow: number;
  clipHigh: number;
  /** 0 disables. */
  dualClip: number;
  maxLogRatio: number;
  /** 0 token-mean, 1 seq-mean-token-sum, 2 seq-mean-token-mean, 3 seq-mean-token-sum-norm. */
  aggregation: number;
  sequenceRatio: number;
  horizon: number;
  tokenCount: number;
  seqCount: number;
  entropy: number;
}

export type NativeMetrics = PolicyLossMetrics & { loss: number };

/** The `addon.kernels` surface (native/src/kernels/kernels_module.cc). */
export interface PolicyLossArgs {
  backend: 'cpu' | 'cuda' | 'hip';
  logits: Float32Array | Uint16Array;
  bf16: boolean;
  vocabSize: number;
  targets: Int32Array;
  oldLogprobs: Float32Array;
  advantages: Float32Array;
  lossMask: Uint8Array;
  cuSeqlens: Int32Array;
  dlogits: Float32Array;
  logp: Float32Array;
  entropy: Float32Array | undefined;
  config: NativeConfig;
}

export interface KernelsAddon {
  policyLoss(args: PolicyLossArgs): NativeMetrics;
  /** The same on the libuv thread pool; `args` and its arrays stay referenced until it settles. */
  policyLossAsync(args: PolicyLossArgs): Promise<NativeMetrics>;
  fusedLinear(args: {
    hidden: Float32Array;
    weight: Float32Array;
    hiddenSize: number;
    vocabSize: number;
    targets: Int32Array;
    oldLogprobs: Float32Array;
    advantages: Float32Array;
    lossMask: Uint8Array;
    cuSeqlens: Int32Array;
    dHidden: Float32Array;
    dWeight: Float32Array;
    /** Add into dWeight instead of overwriting it. */
    accumulate: boolean;
    logp: Float32Array;
    config: NativeConfig;
    /** cpu (default), cuda or hip */
    backend?: string;
    /** GPU backends: fp32 (default) or bf16 tensor-core products with fp32 accumulation. */
    precision?: 'fp32' | 'bf16';
    /** GPU backends: runs on the uploaded buffers, outputs from the last (the GPU bench; default 1). */
    repeat?: number;
  }): NativeMetrics & {
    workspaceBytes: number;
    /** GPU backends: 1 when the logits were made once, 2 when the backward recomputed them. */
    passes?: number;
    /** GPU backends: median seconds of one run on device buffers (no copies of hidden or weight). */
    deviceSeconds?: number;
  };
  copyFloats(args: { src: Float32Array; dst: Float32Array }): void;
  scaleFloats(args: { data: Float32Array; factor: number }): void;
}

const AGG = {
  'token-mean': 0,
  'seq-mean-token-sum': 1,
  'seq-mean-token-mean': 2,
  'seq-mean-token-sum-norm': 3,
} as const;

export function toNativeConfig(cfg: PolicyLossConfig): NativeConfig {
  return {
    temperature: cfg.temperature,
    clipLow: cfg.clipLow,
    clipHigh: cfg.clipHigh,
    dualClip: cfg.dualClip ?? 0,
    maxLogRatio: cfg.maxLogRatio,
    aggregation: AGG[cfg.aggregation],
    sequenceRatio: cfg.ratioLevel === 'sequence' ? 1 : 0,
    horizon: cfg.horizon ?? 0,
    tokenCount: cfg.tokenCount ?? -1,
    seqCount: cfg.seqCount ?? -1,
    entropy: cfg.computeEntropy ? 1 : 0,
  };
}

/** The kernels namespace of the addon, or a KernelError saying how to build it. */
export function kernelsAddon(): KernelsAddon {
  try {
    const addon = loadNative();
    const k = addon.kernels as KernelsAddon | undefined;
    if (!k) {
      throw new KernelError(
        KernelErrorCode.BACKEND_UNAVAILABLE,
        `the native addon has no kernels component; rebuild it: ${nativeBuildCommand()}`,
      );
    }
    return k;
  } catch (err) {
    if (err instanceof KernelError) throw err;
    const msg = err instanceof NativeLoadError ? err.message : String(err);
    throw new KernelError(KernelErrorCode.BACKEND_UNAVAILABLE, msg, { cause: err });
  }
}

function toKernelError(err: unknown): KernelError {
  if (err instanceof KernelError) return err;
  const e = err as Error & { code?: string };
  const known = Object.values(KernelErrorCode) as string[];
  const code = (
    e.code && known.includes(e.code) ? e.code : KernelErrorCode.NATIVE_FAILURE
  ) as KernelErrorCode;
  return new KernelError(code, `native: ${e.message}`, { cause: err });
}

/** Runs a native call and turns its error (which carries `code`) into a KernelError. */
export function callNative<R>(fn: () => R): R {
  try {
    return fn();
  } catch (err) {
    throw toKernelError(err);
  }
}

/** {@link callNative} for calls that return a promise (errors may throw or reject). */
export async function callNativeAsync<R>(fn: () => Promise<R>): Promise<R> {
  try {
    return await fn();
  } catch (err) {
    throw toKernelError(err);
  }
}
