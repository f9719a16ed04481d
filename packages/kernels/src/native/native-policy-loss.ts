import type { PolicyLossConfig } from '../config.js';
import type {
  FusedLinearInputs,
  FusedLinearResult,
  GradTarget,
  PolicyLossInputs,
  PolicyLossResult,
} from '../types.js';
import {
  callNative,
  callNativeAsync,
  kernelsAddon,
  type NativeMetrics,
  type PolicyLossArgs,
  toNativeConfig,
} from './binding.js';

function split(m: NativeMetrics): { loss: number; metrics: PolicyLossResult['metrics'] } {
  const { loss, tokens, clipFracLow, clipFracHigh, clipFracDual, approxKl, ppoKl, entropy } = m;
  return { loss, metrics: { tokens, clipFracLow, clipFracHigh, clipFracDual, approxKl, ppoKl, entropy } };
}

function policyLossArgs(
  backend: 'cpu' | 'cuda' | 'hip',
  inp: PolicyLossInputs,
  cfg: PolicyLossConfig,
  out: GradTarget,
  T: number,
): PolicyLossArgs {
  const bf16 = inp.logits instanceof Uint16Array;
  return {
    backend,
    logits: inp.logits,
    bf16,
    vocabSize: inp.vocabSize,
    targets: inp.targets,
    oldLogprobs: inp.oldLogprobs,
    advantages: inp.advantages,
    lossMask: inp.lossMask,
    cuSeqlens: inp.cuSeqlens,
    dlogits: out.inPlace
      ? (inp.logits as Float32Array)
      : (out.gradOut ?? new Float32Array(inp.logits.length)),
    logp: new Float32Array(T),
    entropy: cfg.computeEntropy ? new Float32Array(T) : undefined,
    config: toNativeConfig(cfg),
  };
}

/** The logits variant on the native CPU, CUDA or HIP backend (inputs already validated). */
export function nativePolicyLoss(
  backend: 'cpu' | 'cuda' | 'hip',
  inp: PolicyLossInputs,
  cfg: PolicyLossConfig,
  out: GradTarget,
  T: number,
): PolicyLossResult {
  const k = kernelsAddon();
  const args = policyLossArgs(backend, inp, cfg, out, T);
  const m = callNative(() => k.policyLoss(args));
  return { ...split(m), dlogits: args.dlogits, logprobs: args.logp };
}

/** {@link nativePolicyLoss} on the libuv thread pool: the event loop stays free while it runs. */
export async function nativePolicyLossAsync(
  backend: 'cpu' | 'cuda' | 'hip',
  inp: PolicyLossInputs,
  cfg: PolicyLossConfig,
  out: GradTarget,
  T: number,
): Promise<PolicyLossResult> {
  const k = kernelsAddon();
  const args = policyLossArgs(backend, inp, cfg, out, T);
  const m = await callNativeAsync(() => k.policyLossAsync(args));
  return { ...split(m), dlogits: args.dlogits, logprobs: args.logp };
}

/** The fused-linear variant on a native backend; also reports the workspace it allocated. */
export function nativeFusedLinear(
  inp: FusedLinearInputs,
  cfg: PolicyLossConfig,
  T: number,
  out: { dWeightOut?: Float32Array; accumulate?: boolean; backend?: 'cpu' | 'cuda' | 'hip' } = {},
): FusedLinearResult & { workspaceBytes: number; passes?: number } {
  const k = kernelsAddon();
  const dHidden = new Float32Array(T * inp.hiddenSize);
  const dWeight = out.dWeightOut ?? new Float32Array(inp.vocabSize * inp.hiddenSize);
  const logp = new Float32Array(T);
  const m = callNative(() =>
    k.fusedLinear({
      hidden: inp.hidden,
      weight: inp.weight,
      hiddenSize: inp.hiddenSize,
      vocabSize: inp.vocabSize,
      targets: inp.targets,
      oldLogprobs: inp.oldLogprobs,
      advantages: inp.advantages,
      lossMask: inp.lossMask,
      cuSeqlens: inp.cuSeqlens,
      dHidden,
      dWeight,
      accumulate: out.accumulate === true && out.dWeightOut !== undefined,
      logp,
      config: toNativeConfig(cfg),
      backend: out.backend ?? 'cpu',
    }),
  );
  const passes = m.passes === undefined ? {} : { passes: m.passes };
  return { ...split(m), dHidden, dWeight, logprobs: logp, workspaceBytes: m.workspaceBytes, ...passes };
}
