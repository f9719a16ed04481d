import { z } from 'zod';

/**
 * The request fields of vLLM's `POST /v1/completions` that agentrl sends, as vLLM declares them in
 * `vllm/entrypoints/openai/completion/protocol.py` (`CompletionRequest`). Strict: a field vLLM does
 * not know fails, so the adapter cannot drift from the documented shape unnoticed.
 */
export const VllmCompletionRequestSchema = z
  .object({
    model: z.string().nullable().optional(),
    prompt: z.union([
      z.array(z.number().int().nonnegative()),
      z.array(z.array(z.number().int().nonnegative())),
      z.string(),
      z.array(z.string()),
    ]),
    max_tokens: z.number().int().nonnegative().nullable().optional(),
    temperature: z.number().nullable().optional(),
    top_p: z.number().nullable().optional(),
    top_k: z.number().int().nullable().optional(),
    seed: z.number().int().nullable().optional(),
    n: z.number().int().positive().optional(),
    stream: z.boolean().nullable().optional(),
    stop: z
      .union([z.string(), z.array(z.string())])
      .nullable()
      .optional(),
    stop_token_ids: z.array(z.number().int()).nullable().optional(),
    include_stop_str_in_output: z.boolean().optional(),
    skip_special_tokens: z.boolean().optional(),
    spaces_between_special_tokens: z.boolean().optional(),
    logprobs: z.number().int().nullable().optional(),
    return_token_ids: z.boolean().nullable().optional(),
    return_tokens_as_token_ids: z.boolean().nullable().optional(),
    echo: z.boolean().nullable().optional(),
    frequency_penalty: z.number().nullable().optional(),
    presence_penalty: z.number().nullable().optional(),
    user: z.string().nullable().optional(),
  })
  .strict();

/**
 * The request fields of SGLang's `POST /generate` that agentrl sends, as SGLang declares them in
 * `python/sglang/srt/managers/io_struct.py` (`GenerateReqInput`) and its sampling params
 * (`python/sglang/srt/sampling/sampling_params.py`).
 */
export const SglangGenerateRequestSchema = z
  .object({
    text: z.union([z.string(), z.array(z.string())]).optional(),
    input_ids: z
      .union([z.array(z.number().int().nonnegative()), z.array(z.array(z.number().int()))])
      .optional(),
    rid: z.string().optional(),
    sampling_params: z
      .object({
        max_new_tokens: z.number().int().nonnegative().optional(),
        temperature: z.number().optional(),
        top_p: z.number().optional(),
        top_k: z.number().int().optional(),
        stop: z.union([z.string(), z.array(z.string())]).optional(),
        stop_token_ids: z.array(z.number().int()).optional(),
        skip_special_tokens: z.boolean().optional(),
        no_stop_trim: z.boolean().optional(),
        sampling_seed: z.number().int().optional(),
      })
      .strict()
      .optional(),
    return_logprob: z.boolean().optional(),
    logprob_start_len: z.number().int().optional(),
    stream: z.boolean().optional(),
  })
  .strict()
  .refine((r) => r.text !== undefined || r.input_ids !== undefined, 'either text or input_ids is required');

/** SGLang `POST /abort_request` (`AbortReq`). */
export const SglangAbortRequestSchema = z
  .object({ rid: z.string().optional(), abort_all: z.boolean().optional() })
  .strict();

/** SGLang `POST /update_weights_from_disk` (`UpdateWeightFromDiskReqInput`). */
export const SglangUpdateWeightsRequestSchema = z
  .object({
    model_path: z.string().min(1),
    load_format: z.string().optional(),
    abort_all_requests: z.boolean().optional(),
    weight_version: z.string().optional(),
    flush_cache: z.boolean().optional(),
  })
  .strict();

/** vLLM dev-mode `POST /collective_rpc`. */
export const VllmCollectiveRpcRequestSchema = z
  .object({
    method: z.string().min(1),
    args: z.array(z.string()).optional(),
    kwargs: z.record(z.string(), z.string()).optional(),
    timeout: z.number().nullable().optional(),
  })
  .strict();
