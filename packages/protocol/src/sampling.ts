import { z } from 'zod';

/** Sampling parameters shared by every engine adapter (native, vLLM, SGLang, ONNX). */
export const SamplingParamsSchema = z
  .object({
    temperature: z.number().min(0).default(1).describe('softmax temperature; 0 means greedy'),
    topP: z.number().gt(0).max(1).default(1).describe('nucleus sampling mass'),
    topK: z.number().int().min(0).default(0).describe('keep the k most likely tokens; 0 keeps all'),
    maxNewTokens: z.number().int().positive().default(256).describe('most tokens to generate in one turn'),
    stopTokenIds: z
      .array(z.number().int().nonnegative())
      .default([])
      .describe('token ids that end the turn (kept in the output)'),
    stopStrings: z
      .array(z.string().min(1))
      .default([])
      .describe('strings that end the turn (kept in the output)'),
    seed: z.number().int().optional().describe('per-request seed for reproducible sampling'),
    presencePenalty: z
      .number()
      .min(-2)
      .max(2)
      .optional()
      .describe(
        "OpenAI / vLLM presence penalty: each token already generated in this turn loses this much logit; the recorded logprob stays the model's (before penalties)",
      ),
    frequencyPenalty: z
      .number()
      .min(-2)
      .max(2)
      .optional()
      .describe(
        "OpenAI / vLLM frequency penalty: each token loses this much logit per time it was generated in this turn; the recorded logprob stays the model's (before penalties)",
      ),
  })
  .describe('how to sample one turn');
export type SamplingParams = z.infer<typeof SamplingParamsSchema>;
export type SamplingParamsInput = z.input<typeof SamplingParamsSchema>;
