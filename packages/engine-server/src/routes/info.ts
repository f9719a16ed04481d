import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { SglangAbortRequestSchema } from '../request-schemas.js';
import { generationSpec } from '../sampling.js';

/**
 * vLLM's `/health` and `/v1/models` (with its `permission` card, `vllm/entrypoints/openai/protocol.py`
 * `ModelCard`), SGLang's `/health_generate` (200 only if one token can be generated now, else 503).
 */
function healthAndModels(app: FastifyInstance, ctx: ServerContext): void {
  const { served } = ctx;
  const permissionId = randomUUID().replaceAll('-', '');
  app.get('/health', async (_req, reply) => reply.code(200).send());
  app.get('/health_generate', async (_req, reply) => {
    try {
      const spec = generationSpec({ temperature: 0, maxNewTokens: 1 }, []);
      await served.generate(`health-${randomUUID()}`, [ctx.eosIds[0] ?? 0], spec);
    } catch {
      return reply.code(503).send();
    }
    return reply.code(200).send();
  });
  app.get('/v1/models', async () => ({
    object: 'list',
    data: [
      {
        id: ctx.modelName,
        object: 'model',
        created: 0,
        owned_by: 'agentrl',
        root: served.modelPath,
        parent: null,
        max_model_len: served.maxModelLen,
        permission: [
          {
            id: `modelperm-${permissionId}`,
            object: 'model_permission',
            created: 0,
            allow_create_engine: false,
            allow_sampling: true,
            allow_logprobs: true,
            allow_search_indices: false,
            allow_view: true,
            allow_fine_tuning: false,
            organization: '*',
            group: null,
            is_blocking: false,
          },
        ],
      },
    ],
  }));
}

/**
 * Health, model listing, load and cache control: vLLM's `/health`, `/v1/models` (the served model
 * name, `max_model_len`), `/reset_prefix_cache`, `/metrics`; SGLang's `/get_server_info`,
 * `/get_model_info` (with `weight_version`), `/get_load`, `/flush_cache`, `/abort_request`.
 */
export async function infoRoutes(
  app: FastifyInstance,
  ctx: ServerContext,
  kvCapacityTokens: number,
): Promise<void> {
  const { served } = ctx;
  healthAndModels(app, ctx);
  const serverInfo = async () => ({
    model_path: served.modelPath,
    served_model_name: ctx.modelName,
    max_total_num_tokens: kvCapacityTokens,
    context_length: served.maxModelLen,
    weight_version: served.weightVersion,
    version: 'agentrl',
  });
  app.get('/get_server_info', serverInfo);
  app.get('/server_info', serverInfo);
  app.get('/get_model_info', async () => ({
    model_path: served.modelPath,
    tokenizer_path: served.modelPath,
    is_generation: true,
    weight_version: served.weightVersion,
  }));
  const loads = async () => {
    const load = await served.engine.load();
    return [
      {
        dp_rank: 0,
        num_reqs: served.running,
        num_waiting_reqs: served.waiting + (load.waiting ?? 0),
        num_tokens: Math.round((load.kvUsage ?? 0) * kvCapacityTokens),
      },
    ];
  };
  app.get('/get_load', loads);
  app.get('/v1/loads', loads);
  const flush = async (_req: unknown, reply: { type(t: string): { send(b: string): unknown } }) => {
    await served.flushCache();
    return reply
      .type('text/plain')
      .send(
        'Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n',
      );
  };
  app.get('/flush_cache', flush);
  app.post('/flush_cache', flush);
  app.post('/reset_prefix_cache', async (_req, reply) => {
    await served.flushCache();
    return reply.code(200).send();
  });
  app.post('/abort_request', async (req) => {
    const body = SglangAbortRequestSchema.parse(req.body ?? {});
    served.abort(body.abort_all ? undefined : (body.rid ?? ''));
    return {};
  });
  app.get('/metrics', async (_req, reply) => {
    reply.header('content-type', ctx.metrics.registry.contentType);
    return ctx.metrics.registry.metrics();
  });
}
