export {
  type ConnectEnginesOptions,
  connectEngines,
  type RemoteEngine,
  syncEngineWeights,
} from './adapters/connect-engines.js';
export {
  type BatchGenerator,
  createNativeAdapter,
  type NativeAdapterOptions,
} from './adapters/native-adapter.js';
export {
  checkTokenizerAgreement,
  probeEngine,
  type RemoteEngineInfo,
  resolveServedModel,
  TOKENIZER_PROBE,
} from './adapters/remote-checks.js';
export { createSglangAdapter, type SglangAdapter } from './adapters/sglang-adapter.js';
export {
  createVllmAdapter,
  type RemoteAdapterOptions,
  type VllmAdapter,
  type VllmAdapterOptions,
} from './adapters/vllm-adapter.js';
export { type AgentLoopContext, runTrajectory, type TrajectoryJob, turnStops } from './agent-loop.js';
export {
  CHATML_TEMPLATE,
  type ChatFormat,
  type ChatFormatOptions,
  createChatFormat,
  createChatFormatForTokenizer,
  type TemplateTokenizer,
  wrapToolResponse,
} from './chat-format.js';
export {
  AGENT_LOOP_DEFAULTS,
  type AgentLoopConfig,
  type AgentLoopConfigInput,
  AgentLoopConfigSchema,
} from './config.js';
export type {
  EngineAdapter,
  EngineLoad,
  GenerateRequest,
  GenerateResult,
  WeightUpdate,
} from './engine-adapter.js';
export { isEngineFailure, RolloutError, RolloutErrorCode } from './errors.js';
export { createJsonClient, type JsonClient, type JsonClientOptions } from './http/json-client.js';
export { metricSum, type PromSample, parsePrometheus } from './http/prometheus.js';
export { type RetryOptions, withRetry } from './http/retry.js';
export {
  type DecoderConfig,
  type DecoderShape,
  type DecoderWeights,
  decoderShape,
  exportDecoderToOnnx,
} from './onnx/export-decoder.js';
export { createOnnxAdapter, type OnnxAdapterOptions } from './onnx/onnx-adapter.js';
export { type CodeExecutor, createPythonTool, type PythonToolOptions } from './python-tool.js';
export { createRollout, type Rollout, type RolloutOptions, type RolloutPrompt } from './rollout.js';
export { type CapacityWatcher, watchEngineCapacity } from './scheduler/capacity-watcher.js';
export { createEngineScheduler, type EngineSchedulerOptions } from './scheduler/engine-scheduler.js';
export { createKvAwareScheduler, type KvAwareSchedulerOptions } from './scheduler/kv-aware-scheduler.js';
export type {
  ScheduledEngine,
  Scheduler,
  SchedulerLease,
  SchedulerSnapshot,
} from './scheduler/scheduler.js';
export { createStaticScheduler } from './scheduler/static-scheduler.js';
export { createSimClock, type SimClock } from './simulator/sim-clock.js';
export { createSimEngine, type SimEngine, type SimEngineConfig } from './simulator/sim-engine.js';
export { type SimulationConfig, type SimulationResult, simulateStep } from './simulator/simulate.js';
export {
  DEFAULT_WORKLOAD,
  generateWorkload,
  type TrajectorySpec,
  type WorkloadConfig,
} from './simulator/workload.js';
export { type RolloutTokenizer, singleTokenId } from './tokenizer.js';
export { type ParsedToolCall, parseToolCall, TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from './tool-call-parser.js';
export { formatToolOutcome } from './tool-response.js';
export { createToolRegistry, type Tool, type ToolContext, type ToolRegistry, toolError } from './tools.js';
export { TrajectoryBuilder } from './trajectory-builder.js';
export { truncateMiddle } from './truncate.js';
