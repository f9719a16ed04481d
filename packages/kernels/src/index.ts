export {
  CPU_KERNEL_PATHS,
  type CpuKernelPath,
  type CpuKernelsInfo,
  cpuKernels,
  setCpuKernels,
} from '@agentrl/native';
export { type BackendInfo, listBackends } from './backends.js';
export { bf16ToFloat32, float32ToBf16 } from './bf16.js';
export {
  type AggregationMode,
  AggregationModeSchema,
  POLICY_LOSS_DEFAULTS,
  type PolicyLossConfig,
  type PolicyLossConfigInput,
  PolicyLossConfigSchema,
  parsePolicyLossConfig,
} from './config.js';
export { KernelError, KernelErrorCode } from './errors.js';
/** The numeric config of the native kernels (what @agentrl/engine's devicePolicyLoss takes). */
export {
  type NativeConfig as NativePolicyLossConfig,
  toNativeConfig as nativePolicyLossConfig,
} from './native/binding.js';
export {
  type FusedLinearOptions,
  fusedLinearPolicyLoss,
  type PolicyLossOptions,
  policyLoss,
  policyLossSync,
} from './policy-loss.js';
export { referenceFusedLinear } from './reference/fused-linear.js';
export { referencePolicyLoss } from './reference/policy-loss.js';
export { tokenMath } from './reference/token-math.js';
export type {
  Backend,
  FusedLinearInputs,
  FusedLinearResult,
  GradTarget,
  PolicyLossInputs,
  PolicyLossMetrics,
  PolicyLossResult,
  TokenInputs,
} from './types.js';
export { disposeWebGpu } from './webgpu/device.js';
