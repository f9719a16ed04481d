import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { EngineServerError } from '../errors.js';
import {
  SglangUpdateTensorRequestSchema,
  SglangUpdateWeightsRequestSchema,
  VllmCollectiveRpcRequestSchema,
} from '../request-schemas.js';
import { decodeNamedTensors } from '../tensor-update.js';

/**
 * Weight reload from disk, in place: SGLang's `POST /update_weights_from_disk {model_path,
 * weight_version}` (`http_server.py`: 200 `{success: true, message, num_paused_requests}`, a bad
 * path 400 `{success: false, message}`) and vLLM's dev-mode `POST /collective_rpc
 * {"method": "reload_weights"}` (re-reads the directory the server was started on; `{results}`);
 * SGLang's `POST /update_weights_from_tensor` (tensors copied into the served parameters in place).
 */
export async function weightRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  app.post('/update_weights_from_disk', async (req, reply) => {
    const body = SglangUpdateWeightsRequestSchema.safeParse(req.body);
    if (!body.success)
      return reply
        .code(400)
        .send({ success: false, message: `invalid request: ${body.error.message}`, num_paused_requests: 0 });
    try {
      await ctx.served.reload(body.data.model_path, body.data.weight_version);
    } catch (err) {
      if (!(err instanceof EngineServerError)) throw err;
      return reply.code(400).send({ success: false, message: err.message, num_paused_requests: 0 });
    }
    return { success: true, message: 'Succeeded to update model weights.', num_paused_requests: 0 };
  });
  // SGLang `/update_weights_from_tensor` (`UpdateWeightsFromTensorReqInput`): `{success, message}`,
  // 400 with success false when refused; the tensors' format is tensor-update.ts's.
  app.post('/update_weights_from_tensor', async (req, reply) => {
    const body = SglangUpdateTensorRequestSchema.safeParse(req.body);
    if (!body.success)
      return reply.code(400).send({ success: false, message: `invalid request: ${body.error.message}` });
    try {
      const tensors = await decodeNamedTensors(body.data.serialized_named_tensors, body.data.load_format);
      await ctx.served.updateTensors(tensors, body.data.weight_version);
    } catch (err) {
      if (!(err instanceof EngineServerError)) throw err;
      return reply.code(400).send({ success: false, message: err.message });
    }
    return { success: true, message: 'Succeeded to update model weights.' };
  });
  app.post('/collective_rpc', async (req) => {
    const body = VllmCollectiveRpcRequestSchema.parse(req.body);
    if (body.method !== 'reload_weights')
      throw new EngineServerError(
        'INVALID_REQUEST',
        `collective_rpc method ${body.method} is not available here; only reload_weights is`,
      );
    await ctx.served.reload(ctx.served.launchPath);
    return { results: [null] };
  });
}
