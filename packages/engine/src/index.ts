/** Which ISA level of the CPU kernels runs (avx512 / avx2 / portable), and a switch for tests. */
export { type CpuKernelPath, type CpuKernelsInfo, cpuKernels, setCpuKernels } from '@agentrl/native';
export { type PackedBatch, packSequences, validateBatch } from './batch.js';
export {
  hasOptimizerState,
  type LoadModelOptions,
  loadModel,
  loadOptimizerState,
  type SaveModelOptions,
  type SaveOptimizerOptions,
  saveModel,
  saveOptimizerState,
} from './checkpoint.js';
export {
  MODEL_DTYPES,
  type ModelConfig,
  type ModelConfigInput,
  ModelConfigSchema,
  type ModelDtype,
  modelDtype,
  type NativeModelConfig,
  parseModelConfig,
  ropeTheta,
  SUPPORTED_ARCHITECTURES,
  toHfConfigJson,
} from './config.js';
export {
  bindingForDevice,
  DEVICES,
  type Device,
  type DeviceOptions,
  type DevicePolicyLossArgs,
  type DevicePolicyLossMetrics,
  type DevicePrecision,
  type DeviceReduceBucket,
  type DeviceSampleRow,
  type DeviceTransfers,
  deviceGemmPath,
  devicePolicyLoss,
  deviceTransfers,
  deviceUnavailableReason,
  firstRunnableDevice,
  localRank,
  sampleOnDevice,
} from './device.js';
export { EngineError, EngineErrorCode } from './errors.js';
export { type ExportGgufOptions, exportGguf, ggufContents, writeGguf } from './export/gguf.js';
export { type GgufFile, readGguf } from './export/gguf-reader.js';
export {
  createGenerator,
  type GenerateRequest,
  type GenerateResult,
  Generator,
  type GeneratorOptions,
  type LogprobScorer,
} from './generator.js';
export {
  type CreateModelOptions,
  createModel,
  type ForwardOptions,
  Model,
  type ModelMemory,
  type ModelMemoryOptions,
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
export {
  openSafetensors,
  type SafetensorsDtype,
  type SafetensorsReader,
  type TensorHeader,
  type TensorSource,
  writeSafetensors,
} from './safetensors.js';
export { createRng, requestSeed, type SampledToken, sampleToken } from './sampling.js';
export { DEFAULT_MAX_SHARD_BYTES, splitIntoShards } from './shards.js';
export {
  CharTokenizer,
  type CharTokenizerOptions,
  createCharTokenizer,
  DEFAULT_SPECIAL_TOKENS,
} from './tokenizer/char.js';
export {
  CHATML_TEMPLATE,
  CHATML_TOOLS_TEMPLATE,
  compileChatTemplate,
  type RenderChatOptions,
  renderChat,
  selectChatTemplate,
  type TemplateMessage,
} from './tokenizer/chat.js';
export { loadCheckpointTokenizer } from './tokenizer/checkpoint-tokenizer.js';
export { createHfTokenizer, HfTokenizer, type HfTokenizerMeta } from './tokenizer/hf.js';
export { loadHfTokenizer } from './tokenizer/hf-files.js';
export type { Tokenizer } from './tokenizer/types.js';
export { assertVocabularyFits, vocabularyMismatch } from './tokenizer/vocab-check.js';
