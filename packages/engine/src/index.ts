export { type PackedBatch, packSequences, validateBatch } from './batch.js';
export {
  loadModel,
  loadOptimizerState,
  type SaveModelOptions,
  saveModel,
  saveOptimizerState,
} from './checkpoint.js';
export {
  type ModelConfig,
  type ModelConfigInput,
  ModelConfigSchema,
  type NativeModelConfig,
  parseModelConfig,
  SUPPORTED_ARCHITECTURES,
} from './config.js';
export {
  bindingForDevice,
  DEVICES,
  type Device,
  type DeviceOptions,
  type DevicePolicyLossArgs,
  type DevicePolicyLossMetrics,
  type DevicePrecision,
  deviceGemmPath,
  devicePolicyLoss,
  deviceUnavailableReason,
  sampleOnDevice,
} from './device.js';
export { EngineError, EngineErrorCode } from './errors.js';
export {
  createGenerator,
  type GenerateRequest,
  type GenerateResult,
  Generator,
  type GeneratorOptions,
} from './generator.js';
export {
  type CreateModelOptions,
  createModel,
  type ForwardOptions,
  Model,
  type Parameter,
  type SftLossOptions,
  type SftLossResult,
} from './model.js';
export { setEngineThreads } from './native.js';
export {
  AdamW,
  type AdamWConfig,
  type AdamWConfigInput,
  AdamWConfigSchema,
  createAdamW,
  learningRateAt,
  type OptimizerState,
  type StepResult,
} from './optimizer.js';
export { createRng, type SampledToken, sampleToken } from './sampling.js';
export {
  CharTokenizer,
  type CharTokenizerOptions,
  createCharTokenizer,
  DEFAULT_SPECIAL_TOKENS,
} from './tokenizer/char.js';
export { CHATML_TEMPLATE, type RenderChatOptions, renderChat } from './tokenizer/chat.js';
export { createHfTokenizer, HfTokenizer, loadHfTokenizer } from './tokenizer/hf.js';
export type { Tokenizer } from './tokenizer/types.js';
