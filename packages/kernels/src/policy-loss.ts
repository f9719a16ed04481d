import { type PolicyLossConfigInput, parsePolicyLossConfig } from './config.js';
import { KernelError, KernelErrorCode } from './errors.js';
import { nativeFusedLinear, nativePolicyLoss, nativePolicyLossAsync } from './native/native-policy-loss.js';
import { referenceFusedLinear } from './reference/fused-linear.js';
import { referencePolicyLoss } from './reference/policy-loss.js';
import type {
  Backend,
  FusedLinearInputs,
  FusedLinearResult,
  GradTarget,
  PolicyLossInputs,
  PolicyLossResult,
} from './types.js';
import { expectTyped, validateFusedLinearInputs, validatePolicyLossInputs } from './validate.js';
import { webgpuPolicyLoss } from './webgpu/webgpu-policy-loss.js';

export interface PolicyLossOptions extends PolicyLossConfigInput, GradTarget {
  /** Where to run; default `cpu` (the native addon). */
  backend?: Backend;
}

const BACKENDS: readonly Backend[] = ['reference', 'cpu', 'cuda', 'hip', 'webgpu'];

function backendOf(options: PolicyLossOptions, allowed: readonly Backend[]): Backend {
  const b = options.backend ?? 'cpu';
  if (!BACKENDS.includes(b)) {
    throw new KernelError(
      KernelErrorCode.INVALID_CONFIG,
      `is "${String(b)}": use one of ${BACKENDS.join(', ')}`,
      { field: 'options.backend' },
    );
  }
  if (!allowed.includes(b)) {
    throw new KernelError(
      KernelErrorCode.INVALID_CONFIG,
      `"${b}" is not available here: use one of ${allowed.join(', ')}`,
      { field: 'options.backend' },
    );
  }
  return b;
}

function split(options: PolicyLossOptions): [PolicyLossConfigInput, GradTarget] {
  const { backend: _b, gradOut, inPlace, ...config } = options;
  return [config, { gradOut, inPlace }];
}

/**
 * GRPO-RoC policy loss, forward and backward, on [T, V] logits: returns the loss, dlogits (new, into
 * `gradOut`, or over `logits` with `inPlace`), the new target log-probabilities and metrics. Every
 * argument is checked before any native call. Synchronous: `reference`, `cpu`, `cuda`, `hip`.
 */
export function policyLossSync(inputs: PolicyLossInputs, options: PolicyLossOptions = {}): PolicyLossResult {
  const backend = backendOf(options, ['reference', 'cpu', 'cuda', 'hip']);
  const [configInput, target] = split(options);
  const cfg = parsePolicyLossConfig(configInput);
  const [T] = validatePolicyLossInputs(inputs, target, backend);
  if (backend === 'reference') return referencePolicyLoss(inputs, cfg, target);
  return nativePolicyLoss(backend as 'cpu' | 'cuda' | 'hip', inputs, cfg, target, T);
}

/**
 * {@link policyLossSync} for every backend, WebGPU included. The native backends run on the libuv
 * thread pool, so the event loop (rollouts, tool calls) keeps going; do not write to the input or
 * output arrays until the promise settles.
 */
export async function policyLoss(
  inputs: PolicyLossInputs,
  options: PolicyLossOptions = {},
): Promise<PolicyLossResult> {
  const backend = backendOf(options, BACKENDS);
  const [configInput, target] = split(options);
  const cfg = parsePolicyLossConfig(configInput);
  const [T] = validatePolicyLossInputs(inputs, target, backend);
  if (backend === 'reference') return referencePolicyLoss(inputs, cfg, target);
  if (backend === 'webgpu') {
    return webgpuPolicyLoss(inputs as PolicyLossInputs & { logits: Float32Array }, cfg, target, T);
  }
  return nativePolicyLossAsync(backend, inputs, cfg, target, T);
}

export interface FusedLinearOptions extends PolicyLossConfigInput {
  /**
   * `cpu` (default, fused and tiled), `reference` (materialises the logits), or `cuda` / `hip` (the
   * device kernel on host arrays: copies hidden and weight in, dHidden and dWeight out; a device
   * model runs it without copies through @agentrl/engine's devicePolicyLoss).
   */
  backend?: 'cpu' | 'reference' | 'cuda' | 'hip';
  /** Write dWeight [V, H] here instead of a new array (e.g. the lm_head's gradient buffer). */
  dWeightOut?: Float32Array;
  /** With `dWeightOut`: add to it instead of overwriting (gradient accumulation over micro-batches). */
  accumulate?: boolean;
}

/**
 * The fused-linear policy loss: from hidden states [T, H] and the lm_head weight [V, H] to the loss,
 * dHidden and dWeight, without materialising [T, V] logits on the `cpu` backend.
 */
export function fusedLinearPolicyLoss(
  inputs: FusedLinearInputs,
  options: FusedLinearOptions = {},
): FusedLinearResult & {
  workspaceBytes?: number;
  /** cuda / hip: 1 when the logits were made once (token-level ratios), 2 when recomputed (sequence). */
  passes?: number;
} {
  const { backend: b, dWeightOut, accumulate, ...configInput } = options;
  const backend = backendOf({ backend: b ?? 'cpu' }, ['cpu', 'reference', 'cuda', 'hip']);
  const cfg = parsePolicyLossConfig(configInput);
  const [T, H, V] = validateFusedLinearInputs(inputs);
  if (dWeightOut !== undefined)
    expectTyped(dWeightOut, Float32Array, 'dWeightOut', V * H, `[V=${V}, H=${H}]`);
  if (accumulate && dWeightOut === undefined) {
    throw new KernelError(
      KernelErrorCode.INVALID_CONFIG,
      'needs dWeightOut: there is nothing to accumulate into',
      { field: 'options.accumulate' },
    );
  }
  if (backend === 'reference') {
    const r = referenceFusedLinear(inputs, cfg);
    if (!dWeightOut) return r;
    for (let i = 0; i < r.dWeight.length; i++)
      dWeightOut[i] = (accumulate ? dWeightOut[i]! : 0) + r.dWeight[i]!;
    return { ...r, dWeight: dWeightOut };
  }
  return nativeFusedLinear(inputs, cfg, T, {
    ...(dWeightOut ? { dWeightOut } : {}),
    accumulate: accumulate === true,
    backend: backend as 'cpu' | 'cuda' | 'hip',
  });
}
