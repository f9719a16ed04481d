import { z } from 'zod';

// Loose objects: unknown fields are ignored, as vLLM's pydantic models (extra="allow" with a
// warning) and SGLang's dataclasses do. Only the fields the server reads are typed here.

const tokenList = z.array(z.number().int().nonnegative());
const stop = z
  .union([z.string(), z.array(z.string())])
  .nullable()
  .optional();

/**
 * vLLM's sampling fields common to `/v1/completions` and `/v1/chat/completions`
 * (`vllm/entrypoints/openai/protocol.py`, `CompletionRequest` / `ChatCompletionRequest`).
 */
const vllmSampling = {
  model: z.string().nullable().optional(),
  temperature: z.number().min(0).nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  top_k: z.number().int().nullable().optional(),
  min_p: z.number().nullable().optional(),
  seed: z.number().int().nullable().optional(),
  n: z.number().int().positive().nullable().optional(),
  stream: z.boolean().nullable().optional(),
  stream_options: z
    .looseObject({
      include_usage: z.boolean().nullable().optional(),
      continuous_usage_stats: z.boolean().nullable().optional(),
    })
    .nullable()
    .optional(),
  stop,
  stop_token_ids: z.array(z.number().int()).nullable().optional(),
  ignore_eos: z.boolean().nullable().optional(),
  include_stop_str_in_output: z.boolean().nullable().optional(),
  skip_special_tokens: z.boolean().nullable().optional(),
  spaces_between_special_tokens: z.boolean().nullable().optional(),
  return_token_ids: z.boolean().nullable().optional(),
  return_tokens_as_token_ids: z.boolean().nullable().optional(),
  prompt_logprobs: z.number().int().nullable().optional(),
  repetition_penalty: z.number().nullable().optional(),
  presence_penalty: z.number().nullable().optional(),
  frequency_penalty: z.number().nullable().optional(),
  min_tokens: z.number().int().nullable().optional(),
  logit_bias: z.record(z.string(), z.number()).nullable().optional(),
  best_of: z.number().int().nullable().optional(),
  use_beam_search: z.boolean().nullable().optional(),
};

/** `POST /v1/completions` (vLLM `CompletionRequest`). */
export const VllmCompletionRequestSchema = z.looseObject({
  ...vllmSampling,
  prompt: z.union([tokenList, z.array(tokenList), z.string(), z.array(z.string())]),
  max_tokens: z.number().int().nonnegative().nullable().optional(),
  logprobs: z.number().int().nonnegative().nullable().optional(),
  echo: z.boolean().nullable().optional(),
  suffix: z.string().nullable().optional(),
});
export type VllmCompletionRequest = z.infer<typeof VllmCompletionRequestSchema>;

const contentPart = z.looseObject({ type: z.string(), text: z.string().optional() });
const chatMessage = z.looseObject({
  role: z.string(),
  content: z
    .union([z.string(), z.array(contentPart)])
    .nullable()
    .optional(),
  tool_calls: z
    .array(
      z.looseObject({
        id: z.string().optional(),
        type: z.string().optional(),
        function: z.looseObject({
          name: z.string(),
          arguments: z.union([z.string(), z.record(z.string(), z.unknown())]),
        }),
      }),
    )
    .nullable()
    .optional(),
  tool_call_id: z.string().nullable().optional(),
  name: z.string().nullable().optional(),
});

/** `POST /v1/chat/completions` (vLLM `ChatCompletionRequest`). */
export const VllmChatRequestSchema = z.looseObject({
  ...vllmSampling,
  messages: z.array(chatMessage).min(1),
  max_tokens: z.number().int().nonnegative().nullable().optional(),
  max_completion_tokens: z.number().int().nonnegative().nullable().optional(),
  logprobs: z.boolean().nullable().optional(),
  top_logprobs: z.number().int().nonnegative().nullable().optional(),
  tools: z
    .array(z.looseObject({ type: z.string(), function: z.looseObject({ name: z.string() }) }))
    .nullable()
    .optional(),
  tool_choice: z.unknown().optional(),
  add_generation_prompt: z.boolean().nullable().optional(),
  continue_final_message: z.boolean().nullable().optional(),
  chat_template_kwargs: z.record(z.string(), z.unknown()).nullable().optional(),
});
export type VllmChatRequest = z.infer<typeof VllmChatRequestSchema>;

/**
 * SGLang `sampling_params` (`python/sglang/srt/sampling/sampling_params.py`, `SamplingParams`).
 */
export const SglangSamplingSchema = z.looseObject({
  max_new_tokens: z.number().int().nonnegative().nullable().optional(),
  temperature: z.number().min(0).optional(),
  top_p: z.number().gt(0).max(1).optional(),
  top_k: z.number().int().optional(),
  min_p: z.number().optional(),
  stop,
  stop_token_ids: z.array(z.number().int()).nullable().optional(),
  ignore_eos: z.boolean().optional(),
  skip_special_tokens: z.boolean().optional(),
  spaces_between_special_tokens: z.boolean().optional(),
  no_stop_trim: z.boolean().optional(),
  sampling_seed: z.number().int().nullable().optional(),
  repetition_penalty: z.number().optional(),
  presence_penalty: z.number().optional(),
  frequency_penalty: z.number().optional(),
  min_new_tokens: z.number().int().optional(),
  logit_bias: z.record(z.string(), z.number()).nullable().optional(),
  n: z.number().int().positive().optional(),
});
export type SglangSampling = z.infer<typeof SglangSamplingSchema>;

/** SGLang `POST /generate` (`GenerateReqInput` in `python/sglang/srt/managers/io_struct.py`). */
export const SglangGenerateRequestSchema = z
  .looseObject({
    text: z.union([z.string(), z.array(z.string())]).optional(),
    input_ids: z.union([tokenList, z.array(tokenList)]).optional(),
    rid: z.union([z.string(), z.array(z.string())]).optional(),
    sampling_params: z.union([SglangSamplingSchema, z.array(SglangSamplingSchema)]).optional(),
    return_logprob: z.union([z.boolean(), z.array(z.boolean())]).optional(),
    logprob_start_len: z.union([z.number().int(), z.array(z.number().int())]).optional(),
    top_logprobs_num: z
      .union([z.number().int().nonnegative(), z.array(z.number().int().nonnegative())])
      .optional(),
    return_text_in_logprobs: z.boolean().optional(),
    stream: z.boolean().optional(),
  })
  .refine((r) => r.text !== undefined || r.input_ids !== undefined, 'either text or input_ids is required');
export type SglangGenerateRequest = z.infer<typeof SglangGenerateRequestSchema>;

/** SGLang `POST /abort_request` (`AbortReq`). */
export const SglangAbortRequestSchema = z.looseObject({
  rid: z.string().optional(),
  abort_all: z.boolean().optional(),
});

/** SGLang `POST /update_weights_from_disk` (`UpdateWeightFromDiskReqInput`). */
export const SglangUpdateWeightsRequestSchema = z.looseObject({
  model_path: z.string().min(1),
  load_format: z.string().nullable().optional(),
  abort_all_requests: z.boolean().optional(),
  weight_version: z.string().nullable().optional(),
  flush_cache: z.boolean().optional(),
});

/** SGLang `POST /update_weights_from_tensor` (`UpdateWeightsFromTensorReqInput`). */
export const SglangUpdateTensorRequestSchema = z.looseObject({
  serialized_named_tensors: z.array(z.string()).min(1),
  load_format: z.string().nullable().optional(),
  flush_cache: z.boolean().optional(),
  abort_all_requests: z.boolean().optional(),
  weight_version: z.string().nullable().optional(),
});

/** vLLM dev-mode `POST /collective_rpc`. */
export const VllmCollectiveRpcRequestSchema = z.looseObject({
  method: z.string().min(1),
  args: z.array(z.string()).optional(),
  kwargs: z.record(z.string(), z.string()).optional(),
  timeout: z.number().nullable().optional(),
});

/** vLLM `POST /tokenize` (`TokenizeCompletionRequest` / `TokenizeChatRequest`) and SGLang's. */
export const TokenizeRequestSchema = z
  .looseObject({
    model: z.string().nullable().optional(),
    prompt: z.union([z.string(), z.array(z.string())]).optional(),
    messages: z.array(chatMessage).optional(),
    add_special_tokens: z.boolean().optional(),
    add_generation_prompt: z.boolean().optional(),
  })
  .refine((r) => r.prompt !== undefined || r.messages !== undefined, 'either prompt or messages is required');

/** vLLM `POST /detokenize` and SGLang's. */
export const DetokenizeRequestSchema = z.looseObject({
  model: z.string().nullable().optional(),
  tokens: z.union([tokenList, z.array(tokenList)]),
});
