export {
  type ConnectEnginesOptions,
  connectEngines,
  type RemoteEngine,
  syncEngineWeights,
} from './connect-engines.js';
export { createJsonClient, type JsonClient, type JsonClientOptions } from './http/json-client.js';
export { metricSum, type PromSample, parsePrometheus } from './http/prometheus.js';
export { type RetryOptions, withRetry } from './http/retry.js';
export { type BatchGenerator, createNativeAdapter, type NativeAdapterOptions } from './native-adapter.js';
export {
  checkTokenizerAgreement,
  probeEngine,
  type RemoteEngineInfo,
  resolveServedModel,
  TOKENIZER_PROBE,
} from './remote-checks.js';
export { createSglangAdapter, type SglangAdapter } from './sglang-adapter.js';
export {
  createVllmAdapter,
  type RemoteAdapterOptions,
  type VllmAdapter,
  type VllmAdapterOptions,
} from './vllm-adapter.js';
