export {
  CHATML_TEMPLATE,
  CHATML_TOOLS_TEMPLATE,
  type ChatTemplateSource,
  compileChatTemplate,
  ProtocolError,
  ProtocolErrorCode,
  type RenderChatOptions,
  renderChat,
  selectChatTemplate,
  type TemplateMessage,
} from './chat-template.js';
export {
  AgentrlError,
  defineErrorCodes,
  describeErrorCode,
  type ErrorCodeInput,
  type ErrorCodeOf,
  type ErrorCodeTable,
  errorClass,
  errorCode,
  isAgentrlError,
  type PackageErrorClass,
  type PackageErrorOptions,
} from './errors.js';
export {
  type Chat,
  type ChatMessage,
  ChatMessageSchema,
  ChatSchema,
  type Role,
  RoleSchema,
} from './messages.js';
export { fmix32, fnv1a, fnv1aWord, hashSeed, Rng } from './random.js';
export { type SamplingParams, type SamplingParamsInput, SamplingParamsSchema } from './sampling.js';
export { alternating, median, parseVariants, type Variant } from './side-by-side.js';
export {
  FAILED_TOOL_STATUSES,
  isToolFailure,
  type ToolCall,
  ToolCallParseErrorKindSchema,
  type ToolCallParseFailure,
  ToolCallParseFailureSchema,
  ToolCallSchema,
  type ToolOutcome,
  ToolOutcomeSchema,
  type ToolStatus,
  ToolStatusSchema,
} from './tool.js';
export {
  type FinishReason,
  FinishReasonSchema,
  type Group,
  GroupSchema,
  isEngineFailedTrajectory,
  type ToolCallRecord,
  ToolCallRecordSchema,
  type Trajectory,
  TrajectorySchema,
  type Turn,
  TurnSchema,
} from './trajectory.js';
