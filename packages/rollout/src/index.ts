export { CHATML_TEMPLATE, CHATML_TOOLS_TEMPLATE } from '@agentrl/protocol';
export { type AgentLoopContext, runTrajectory, type TrajectoryJob, turnStops } from './agent-loop.js';
export {
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
export { type CodeExecutor, createPythonTool, type PythonToolOptions } from './python-tool.js';
export { createRollout, type Rollout, type RolloutOptions, type RolloutPrompt } from './rollout.js';
export type { ScheduledEngine, Scheduler, SchedulerLease, SchedulerSnapshot } from './scheduler.js';
export { type RolloutTokenizer, singleTokenId } from './tokenizer.js';
export { type ParsedToolCall, parseToolCall, TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from './tool-call-parser.js';
export { formatToolOutcome } from './tool-response.js';
export { createToolRegistry, type Tool, type ToolContext, type ToolRegistry, toolError } from './tools.js';
export { TrajectoryBuilder } from './trajectory-builder.js';
export { truncateMiddle } from './truncate.js';
