import type {
  ChatFormat,
  CodeExecutor,
  EngineAdapter,
  RolloutTokenizer,
  ToolRegistry,
} from '@agentrl/rollout';
import type { TrainablePolicy } from './policy.js';
import type { Verify } from './reward.js';

/**
 * The live parts a run works with: the trainable policy, the rollout engines (the policy's own
 * in-process engine, or vLLM/SGLang servers), the code executor and the verifier.
 */
export interface Environment {
  policy: TrainablePolicy | null;
  engines: EngineAdapter[];
  tokenizer: RolloutTokenizer;
  /** Where an HF tokenizer's files are (copied into checkpoints); null for the byte tokenizer. */
  tokenizerDir: string | null;
  /** How prompts and turns are laid out for that tokenizer (SFT, rollouts and eval share it). */
  chatFormat: ChatFormat;
  executor: CodeExecutor;
  /** The tool registry (the python tool on `executor`); its schemas are in the chat template. */
  tools: ToolRegistry;
  verify: Verify;
  /** True when rollouts run on vLLM/SGLang servers. */
  remote: boolean;
  /**
   * Pushes the policy's weights, as policy `version` (RL updates so far), to engines that do not
   * share them in-process; a no-op for the native engine and for a version already sent.
   */
  syncWeights(version: number): Promise<void>;
  close(): Promise<void>;
}
