import type { SamplingParams } from '@agentrl/protocol';

/** One generation request: continue `tokenIds` (the full sequence so far) for one turn. */
export interface GenerateRequest {
  /**
   * Stable id of the trajectory. Engines keep its KV cache (or prefix cache) between turns, so a
   * later turn only prefills the tokens appended since the last one.
   */
  cacheId: string;
  /** The whole sequence so far: prompt, earlier turns, appended tool responses. */
  tokenIds: readonly number[];
  params: SamplingParams;
  /** Cancels the request; the adapter then throws a RolloutError with code ABORTED. */
  signal?: AbortSignal;
  /**
   * Each new token as it is sampled, for streaming; adapters that can (the native one) call it
   * before the result resolves, the others may not call it at all. It never changes what is sampled.
   * In-process engines on the host also pass the logits row the token was drawn from.
   */
  onToken?: (token: number, logprob: number, logits?: Float32Array) => void;
  /** Constrained decoding (in-process engines only): the tokens allowed next, or null for any. */
  allowedTokens?: (generated: readonly number[]) => ReadonlySet<number> | null;
}

/** What the engine sampled for one turn: only the new tokens. */
export interface GenerateResult {
  tokenIds: number[];
  /** Sampling logprob of each new token under the engine's sampling distribution. */
  logprobs: number[];
  /** `stop`: a stop token or string ended the turn (it is included); `length`: maxNewTokens hit. */
  finishReason: 'stop' | 'length';
  /** Version of the weights that sampled it, where the adapter knows it (remote adapters do). */
  policyVersion?: number;
}

/** What an engine says about its load; null where the engine does not report a figure. */
export interface EngineLoad {
  /** Total KV-cache capacity in tokens. */
  kvCapacityTokens: number | null;
  /** Fraction of the KV cache in use, 0..1. */
  kvUsage: number | null;
  /** Requests running now. */
  running: number | null;
  /** Requests queued in the engine. */
  waiting: number | null;
}

/**
 * How new policy weights reach an engine. `version` is the policy version they are (the trainer's
 * step count); adapters that track it stamp it on every later GenerateResult.
 */
export type WeightUpdate =
  /** In-process: swap the model object the generator samples from (native and ONNX adapters). */
  | { kind: 'in-process'; model: unknown; version?: number }
  /** A directory holding HF-layout safetensors + config.json the server can read. */
  | { kind: 'disk'; path: string; version?: number };

/**
 * One inference engine as the agent loop and the scheduler see it. Every adapter (native in-process,
 * vLLM, SGLang, ONNX Runtime) implements this. Failures are thrown as RolloutError with an ENGINE_*
 * code; the agent loop turns them into a trajectory finish reason.
 */
export interface EngineAdapter {
  /** Human-readable name for logs, e.g. `vllm@http://10.0.0.3:8000`. */
  readonly name: string;
  generate(request: GenerateRequest): Promise<GenerateResult>;
  /** The trajectory ended: free what the engine keeps for `cacheId`. Never throws. */
  release(cacheId: string): Promise<void>;
  /** The engine's own load report. */
  load(): Promise<EngineLoad>;
  /** Sync new policy weights. */
  updateWeights(update: WeightUpdate): Promise<void>;
  /** Free resources (connections, native handles). */
  close(): Promise<void>;
}
