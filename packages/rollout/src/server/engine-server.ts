import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SamplingParamsSchema } from '@agentrl/protocol';
import type { EngineAdapter, GenerateResult } from '../engine-adapter.js';
import { RolloutError } from '../errors.js';
import { formatSample } from '../http/prometheus.js';
import type { RolloutTokenizer } from '../tokenizer.js';
import { createPrefixCache } from './prefix-cache.js';
import {
  SglangAbortRequestSchema,
  SglangGenerateRequestSchema,
  SglangUpdateWeightsRequestSchema,
  VllmCollectiveRpcRequestSchema,
  VllmCompletionRequestSchema,
} from './request-schemas.js';

export interface EngineServerOptions {
  /** The engine that serves every request (the native adapter in practice). */
  engine: EngineAdapter;
  /** Turns text prompts into ids and sampled ids into `text`. */
  tokenizer: RolloutTokenizer;
  /** Served model name (`/v1/models`, `model` of responses). */
  model: string;
  /** KV-cache figures reported at /metrics and /get_server_info. */
  kvBlockSize?: number;
  kvCapacityTokens?: number;
  /** Loads new weights from a directory (update_weights_from_disk, collective_rpc reload_weights). */
  loadWeights?: (path: string) => Promise<unknown>;
  /** The launch directory `reload_weights` re-reads. */
  modelDir?: string;
  host?: string;
  port?: number;
}

export interface EngineServer {
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

/**
 * Serves an in-process engine over HTTP with the endpoints and metric names of vLLM's
 * OpenAI-compatible server and of SGLang's native API, so that the HTTP adapters, the official
 * `openai` client and any tool written for those servers can be tested against the real engine here.
 */
export async function startEngineServer(options: EngineServerOptions): Promise<EngineServer> {
  const { engine, tokenizer, model } = options;
  const blockSize = options.kvBlockSize ?? 16;
  const capacity = options.kvCapacityTokens ?? (await engine.load()).kvCapacityTokens ?? 65_536;
  const inFlight = new Map<string, AbortController>();
  const prefixes = createPrefixCache(engine);
  let running = 0;
  let waitingCount = 0;

  const run = async (rid: string, tokenIds: number[], params: unknown): Promise<GenerateResult> => {
    const controller = new AbortController();
    inFlight.set(rid, controller);
    running += 1;
    try {
      const check = SamplingParamsSchema.safeParse(params);
      if (!check.success) throw new HttpError(400, `invalid sampling parameters: ${check.error.message}`);
      const entry = await prefixes.acquire(tokenIds);
      let result: GenerateResult | null = null;
      try {
        result = await engine.generate({
          cacheId: entry.id,
          tokenIds,
          params: check.data,
          signal: controller.signal,
        });
        return result;
      } finally {
        await prefixes.done(entry, result ? [...tokenIds, ...result.tokenIds] : null);
      }
    } finally {
      running -= 1;
      inFlight.delete(rid);
    }
  };

  const promptIds = (prompt: unknown): number[][] => {
    if (typeof prompt === 'string') return [tokenizer.encode(prompt)];
    if (Array.isArray(prompt) && prompt.every((x) => typeof x === 'number')) return [prompt as number[]];
    if (Array.isArray(prompt) && prompt.every((x) => typeof x === 'string'))
      return (prompt as string[]).map((p) => tokenizer.encode(p));
    if (Array.isArray(prompt) && prompt.every((x) => Array.isArray(x))) return prompt as number[][];
    throw new HttpError(
      400,
      'prompt must be a string, a list of strings, a list of token ids or a list of lists',
    );
  };

  const routes: Record<string, (body: Json, req: IncomingMessage, res: ServerResponse) => Promise<unknown>> =
    {
      'GET /health': async () => ({}),
      'GET /v1/models': async () => ({
        object: 'list',
        data: [
          {
            id: model,
            object: 'model',
            created: 0,
            owned_by: 'agentrl',
            root: model,
            max_model_len: capacity,
          },
        ],
      }),
      'POST /v1/completions': async (body, _req, res) => {
        validate(VllmCompletionRequestSchema, body);
        if (body.model !== undefined && body.model !== model)
          throw new HttpError(404, `model ${String(body.model)} is not served; use ${model}`);
        const prompts = promptIds(body.prompt);
        const n = Number(body.n ?? 1);
        const id = `cmpl-${randomUUID()}`;
        const jobs = prompts.flatMap((ids, p) =>
          Array.from({ length: n }, async (_, k) => {
            const r = await run(`${id}-${p}-${k}`, ids, {
              temperature: body.temperature ?? 1,
              topP: body.top_p ?? 1,
              topK: Math.max(0, Number(body.top_k ?? 0)),
              maxNewTokens: body.max_tokens ?? 16,
              stopTokenIds: body.stop_token_ids ?? [],
              stopStrings: typeof body.stop === 'string' ? [body.stop] : (body.stop ?? []),
              ...(body.seed !== undefined && body.seed !== null ? { seed: body.seed } : {}),
            });
            return { r, promptTokens: ids, index: p * n + k };
          }),
        );
        const done = await Promise.all(jobs);
        const wantLogprobs = body.logprobs !== undefined && body.logprobs !== null;
        const choices = done.map(({ r, promptTokens, index }) => ({
          index,
          text: tokenizer.decode(r.tokenIds),
          logprobs: wantLogprobs
            ? {
                tokens: body.return_tokens_as_token_ids
                  ? r.tokenIds.map((t) => `token_id:${t}`)
                  : r.tokenIds.map((t) => tokenizer.decode([t])),
                token_logprobs: r.logprobs,
                top_logprobs: r.tokenIds.map((t, i) => ({ [tokenizer.decode([t])]: r.logprobs[i]! })),
                text_offset: offsets(r.tokenIds, tokenizer),
              }
            : null,
          finish_reason: r.finishReason,
          stop_reason: null,
          ...(body.return_token_ids ? { token_ids: r.tokenIds, prompt_token_ids: promptTokens } : {}),
        }));
        const promptTokens = done.reduce((a, d) => a + d.promptTokens.length, 0);
        const completionTokens = done.reduce((a, d) => a + d.r.tokenIds.length, 0);
        const response = {
          id,
          object: 'text_completion',
          created: Math.floor(Date.now() / 1000),
          model,
          choices,
          usage: {
            prompt_tokens: promptTokens,
            completion_tokens: completionTokens,
            total_tokens: promptTokens + completionTokens,
          },
        };
        if (body.stream) {
          // One chunk per choice, then [DONE], in the server-sent-events framing vLLM uses.
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          for (const c of choices)
            res.write(`data: ${JSON.stringify({ ...response, choices: [c], usage: null })}\n\n`);
          res.end('data: [DONE]\n\n');
          return STREAMED;
        }
        return response;
      },
      'GET /metrics': async (_b, _req, res) => {
        const load = await engine.load();
        const labels = { model_name: model, engine: 0 };
        const lines = [
          '# TYPE vllm:num_requests_running gauge',
          formatSample('vllm:num_requests_running', labels, running),
          '# TYPE vllm:num_requests_waiting gauge',
          formatSample('vllm:num_requests_waiting', labels, Math.max(waitingCount, load.waiting ?? 0)),
          '# TYPE vllm:kv_cache_usage_perc gauge',
          formatSample('vllm:kv_cache_usage_perc', labels, load.kvUsage ?? 0),
          '# TYPE vllm:cache_config_info gauge',
          formatSample(
            'vllm:cache_config_info',
            {
              block_size: blockSize,
              num_gpu_blocks: Math.floor(capacity / blockSize),
              enable_prefix_caching: 'False',
              cache_dtype: 'auto',
            },
            1,
          ),
        ];
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
        res.end(`${lines.join('\n')}\n`);
        return STREAMED;
      },
      'POST /generate': async (body) => {
        validate(SglangGenerateRequestSchema, body);
        const sp = (body.sampling_params ?? {}) as Json;
        const ids = Array.isArray(body.input_ids) ? (body.input_ids as number[]) : promptIds(body.text)[0]!;
        const rid = typeof body.rid === 'string' ? body.rid : randomUUID();
        let r: GenerateResult;
        try {
          r = await run(rid, ids, {
            temperature: sp.temperature ?? 1,
            topP: sp.top_p ?? 1,
            topK: Math.max(0, Number(sp.top_k ?? 0)),
            maxNewTokens: sp.max_new_tokens ?? 128,
            stopTokenIds: sp.stop_token_ids ?? [],
            stopStrings: typeof sp.stop === 'string' ? [sp.stop] : (sp.stop ?? []),
            ...(sp.sampling_seed !== undefined ? { seed: sp.sampling_seed } : {}),
          });
        } catch (err) {
          if (err instanceof RolloutError && err.code === 'ABORTED') {
            return {
              text: '',
              output_ids: [],
              meta_info: {
                id: rid,
                finish_reason: { type: 'abort', message: 'aborted' },
                output_token_logprobs: [],
              },
            };
          }
          throw err;
        }
        return {
          text: tokenizer.decode(r.tokenIds),
          output_ids: r.tokenIds,
          meta_info: {
            id: rid,
            finish_reason:
              r.finishReason === 'length'
                ? { type: 'length', length: r.tokenIds.length }
                : { type: 'stop', matched: r.tokenIds.at(-1) ?? null },
            prompt_tokens: ids.length,
            completion_tokens: r.tokenIds.length,
            cached_tokens: 0,
            ...(body.return_logprob
              ? { output_token_logprobs: r.tokenIds.map((t, i) => [r.logprobs[i]!, t, null]) }
              : {}),
          },
        };
      },
      'GET /get_load': async () => loadList(),
      'GET /v1/loads': async () => loadList(),
      'GET /get_server_info': async () => ({
        model_path: options.modelDir ?? model,
        max_total_num_tokens: capacity,
        version: 'agentrl',
      }),
      'GET /get_model_info': async () => ({ model_path: options.modelDir ?? model, is_generation: true }),
      'GET /flush_cache': async (_b, _req, res) => text(res, 'Cache flushed.\n'),
      'POST /flush_cache': async (_b, _req, res) => text(res, 'Cache flushed.\n'),
      'POST /reset_prefix_cache': async (_b, _req, res) => text(res, ''),
      'POST /abort_request': async (body) => {
        validate(SglangAbortRequestSchema, body);
        if (body.abort_all) for (const c of inFlight.values()) c.abort();
        else inFlight.get(String(body.rid ?? ''))?.abort();
        return {};
      },
      'POST /update_weights_from_disk': async (body) => {
        validate(SglangUpdateWeightsRequestSchema, body);
        if (!options.loadWeights)
          throw new HttpError(400, 'this server was started without a weight loader', { success: false });
        await swap(String(body.model_path ?? ''));
        return { success: true, message: 'Succeeded to update model weights.', num_paused_requests: 0 };
      },
      'POST /collective_rpc': async (body) => {
        validate(VllmCollectiveRpcRequestSchema, body);
        if (body.method !== 'reload_weights')
          throw new HttpError(400, `unsupported method ${String(body.method)}`);
        if (!options.loadWeights || !options.modelDir)
          throw new HttpError(400, 'this server was started without a weight loader and modelDir');
        await swap(options.modelDir);
        return { results: [null] };
      },
    };

  const swap = async (path: string) => {
    const weights = await options.loadWeights!(path);
    await engine.updateWeights({ kind: 'in-process', model: weights });
    await prefixes.flush();
  };
  const loadList = async () => {
    const load = await engine.load();
    return [
      {
        dp_rank: 0,
        num_reqs: running,
        num_waiting_reqs: load.waiting ?? 0,
        num_tokens: Math.round((load.kvUsage ?? 0) * capacity),
      },
    ];
  };

  const server = createServer((req, res) => {
    void handle(req, res);
  });
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    const route = routes[`${req.method} ${path}`];
    try {
      if (!route) throw new HttpError(404, `no route ${req.method} ${path}`);
      const body = req.method === 'POST' ? await readJson(req) : {};
      waitingCount += 1;
      let out: unknown;
      try {
        out = await route(body, req, res);
      } finally {
        waitingCount -= 1;
      }
      if (out === STREAMED) return;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(out));
    } catch (err) {
      const status = err instanceof HttpError ? err.status : 500;
      const extra = err instanceof HttpError ? err.extra : {};
      if (!res.headersSent) res.writeHead(status, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          object: 'error',
          message: (err as Error).message,
          type: 'error',
          code: status,
          ...extra,
        }),
      );
    }
  };

  await new Promise<void>((resolve) =>
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve),
  );
  const address = server.address() as AddressInfo;
  return {
    url: `http://${address.address}:${address.port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of inFlight.values()) c.abort();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const STREAMED = Symbol('streamed');

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Json = {},
  ) {
    super(message);
  }
}

/** Rejects a request that strays from the documented shape, naming the offending fields. */
function validate(
  schema: { safeParse(v: unknown): { success: boolean; error?: { message: string } } },
  body: unknown,
) {
  const r = schema.safeParse(body);
  if (!r.success)
    throw new HttpError(400, `request does not match the documented schema: ${r.error?.message}`);
}

function text(res: ServerResponse, body: string) {
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end(body);
  return STREAMED;
}

async function readJson(req: IncomingMessage): Promise<Json> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  if (raw.length === 0) return {};
  try {
    const v = JSON.parse(raw) as unknown;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
    return v as Json;
  } catch (err) {
    throw new HttpError(400, `the request body is not a JSON object: ${(err as Error).message}`);
  }
}

function offsets(ids: readonly number[], tokenizer: RolloutTokenizer): number[] {
  const out: number[] = [];
  let at = 0;
  for (const id of ids) {
    out.push(at);
    at += tokenizer.decode([id]).length;
  }
  return out;
}
