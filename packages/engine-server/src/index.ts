export { EngineServerError, EngineServerErrorCode } from './errors.js';
export { type ParsedToolCalls, parseHermesToolCalls } from './hermes.js';
export { type OpenCheckpoint, openCheckpoint } from './open-checkpoint.js';
export {
  DetokenizeRequestSchema,
  SglangGenerateRequestSchema,
  SglangUpdateWeightsRequestSchema,
  TokenizeRequestSchema,
  VllmChatRequestSchema,
  VllmCollectiveRpcRequestSchema,
  VllmCompletionRequestSchema,
} from './request-schemas.js';
export { type ServeOptions, serveCheckpoint } from './serve.js';
export { parseServeArgs, SERVE_USAGE } from './serve-args.js';
export { type Generation, type PositionLogprobs, ServedEngine } from './served-engine.js';
export {
  createEngineServer,
  type EngineServer,
  type EngineServerOptions,
  startEngineServer,
} from './server.js';
