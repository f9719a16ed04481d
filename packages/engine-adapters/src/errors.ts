import { AgentrlError, defineErrorCodes, type ErrorCodeOf } from '@agentrl/protocol';

/**
 * How connecting to an engine can fail before any request: the server and the run disagree. A
 * request that fails (unreachable, HTTP error, timeout, bad reply, cancelled, an unsupported weight
 * update) is a RolloutError of @agentrl/rollout instead, the EngineAdapter contract the agent loop
 * reads.
 */
export const EngineAdapterErrorCode = defineErrorCodes('ADAPTER', {
  INVALID_CONFIG:
    'the server does not serve the named model, serves several with none named, or tokenizes differently from the local tokenizer',
});
export type EngineAdapterErrorCode = ErrorCodeOf<typeof EngineAdapterErrorCode>;

/** The one error class of @agentrl/engine-adapters. */
export class EngineAdapterError extends AgentrlError<EngineAdapterErrorCode> {
  override readonly name = 'EngineAdapterError';
}
