import { SamplingParamsSchema } from '@agentrl/protocol';
import { z } from 'zod';

/** Knobs of the agent loop; parsed once at the edge. */
export const AgentLoopConfigSchema = z
  .object({
    maxTurns: z
      .number()
      .int()
      .positive()
      .default(5)
      .describe('most assistant turns per trajectory (rStar2-Agent: 5)'),
    maxResponseTokens: z
      .number()
      .int()
      .positive()
      .default(8192)
      .describe('token budget after the prompt: assistant turns plus appended tool responses'),
    toolResponseMaxChars: z
      .number()
      .int()
      .positive()
      .default(2048)
      .describe('tool output longer than this is truncated in the middle before it is appended'),
    sampling: SamplingParamsSchema.default(SamplingParamsSchema.parse({})).describe(
      'sampling of each turn; maxNewTokens caps one turn, the token budget caps the rest',
    ),
    toolTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(120_000)
      .describe(
        'a tool call that takes longer is recorded as a timeout and fed back; the sandbox has its own limit',
      ),
    requestTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(600_000)
      .describe('an engine request that takes longer ends the trajectory with finishReason timeout'),
  })
  .describe('agent loop settings');
export type AgentLoopConfig = z.infer<typeof AgentLoopConfigSchema>;
export type AgentLoopConfigInput = z.input<typeof AgentLoopConfigSchema>;

export const AGENT_LOOP_DEFAULTS: AgentLoopConfig = AgentLoopConfigSchema.parse({});
