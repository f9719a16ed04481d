import { z } from 'zod';
import { ChatSchema, RoleSchema } from './messages.js';
import { ToolCallParseFailureSchema, ToolCallSchema, ToolOutcomeSchema } from './tool.js';

export const FinishReasonSchema = z
  .enum([
    'stop', // the model gave a final answer (end of turn without a tool call)
    'length', // the last turn hit its max new tokens
    'max_turns', // the assistant-turn limit was reached
    'token_budget', // the whole trajectory hit its token budget
    'engine_error', // the engine failed (connection refused, 5xx, truncated stream)
    'timeout', // the engine did not answer in time
    'aborted', // cancelled by the caller
  ])
  .describe('why a trajectory ended');
export type FinishReason = z.infer<typeof FinishReasonSchema>;

/** One tool call made in a trajectory: the parsed call or its parse failure, and what it returned. */
export const ToolCallRecordSchema = z
  .object({
    turn: z.number().int().nonnegative().describe('index of the assistant turn that made the call'),
    call: ToolCallSchema.nullable().describe('the parsed call, null when it failed to parse'),
    parseFailure: ToolCallParseFailureSchema.nullable().describe('why the call did not parse, or null'),
    outcome: ToolOutcomeSchema,
  })
  .describe('one tool call and its outcome');
export type ToolCallRecord = z.infer<typeof ToolCallRecordSchema>;

/** A span of the token sequence: the prompt, an assistant turn, or a tool response. */
export const TurnSchema = z
  .object({
    role: RoleSchema,
    text: z
      .string()
      .describe('decoded text of the span (for logs and the answer extractor; tokens are the truth)'),
    tokenStart: z.number().int().nonnegative().describe('first token index of the span in tokenIds'),
    tokenEnd: z.number().int().nonnegative().describe('one past the last token index of the span'),
  })
  .describe('one span of a trajectory');
export type Turn = z.infer<typeof TurnSchema>;

const tokenArray = z.array(z.number().int().nonnegative());

export const TrajectorySchema = z
  .object({
    id: z.string().min(1).describe('unique id of the trajectory'),
    promptId: z.string().min(1).describe('id of the prompt; trajectories of one prompt form a group'),
    tokenIds: tokenArray.describe('the exact token ids: prompt, then sampled and appended tokens'),
    promptLength: z.number().int().nonnegative().describe('how many leading tokenIds are the prompt'),
    logprobs: z.array(z.number()).describe('per token: the sampling logprob for sampled tokens, 0 elsewhere'),
    lossMask: z
      .array(z.union([z.literal(0), z.literal(1)]))
      .describe('1 on sampled tokens, 0 on prompt and tool responses'),
    turns: z.array(TurnSchema).describe('spans of the sequence in order'),
    toolCalls: z.array(ToolCallRecordSchema).describe('every tool call made, in order'),
    finishReason: FinishReasonSchema,
    reward: z
      .number()
      .nullable()
      .describe('1 for a verified-correct final answer, 0 otherwise; null before scoring'),
    answer: z.string().nullable().optional().describe('the extracted final answer, when scored'),
    formatPenalty: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe('answer-format penalty in [0, 1], when scored'),
    policyVersion: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe('version of the policy weights that sampled it (the oldest, if turns spanned a sync)'),
    engineError: z
      .string()
      .optional()
      .describe('why the engine failed, when finishReason is engine_error, timeout or aborted'),
  })
  .superRefine((t, ctx) => {
    const n = t.tokenIds.length;
    if (t.logprobs.length !== n)
      ctx.addIssue({
        code: 'custom',
        path: ['logprobs'],
        message: `has ${t.logprobs.length} entries, tokenIds has ${n}`,
      });
    if (t.lossMask.length !== n)
      ctx.addIssue({
        code: 'custom',
        path: ['lossMask'],
        message: `has ${t.lossMask.length} entries, tokenIds has ${n}`,
      });
    if (t.promptLength > n)
      ctx.addIssue({
        code: 'custom',
        path: ['promptLength'],
        message: `is ${t.promptLength}, past the ${n} tokens`,
      });
    if (t.reward !== null && !Number.isFinite(t.reward))
      ctx.addIssue({ code: 'custom', path: ['reward'], message: 'must be a finite number or null' });
  })
  .describe('one sampled trajectory, token-exact, with its tool calls and reward');
export type Trajectory = z.infer<typeof TrajectorySchema>;

/**
 * True when the engine, not the model, ended the trajectory (engine_error, timeout, aborted): its
 * tokens are not the policy's answer, so the trainer leaves it out of the loss and counts it.
 */
export function isEngineFailedTrajectory(t: Pick<Trajectory, 'finishReason'>): boolean {
  return t.finishReason === 'engine_error' || t.finishReason === 'timeout' || t.finishReason === 'aborted';
}

export const GroupSchema = z
  .object({
    promptId: z.string().min(1),
    prompt: ChatSchema.optional().describe('the chat prompt the group was sampled from'),
    groundTruth: z.string().optional().describe('the reference answer'),
    trajectories: z.array(TrajectorySchema).describe('all trajectories sampled for the prompt'),
  })
  .describe('all trajectories of one prompt');
export type Group = z.infer<typeof GroupSchema>;
