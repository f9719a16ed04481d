import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import type { ServerContext } from '../context.js';
import { EngineServerError } from '../errors.js';
import { MEMORY_TAGS, type MemoryTag } from '../served-engine.js';

const TagsSchema = z.looseObject({ tags: z.array(z.string()).nullable().optional() });

/** The tags of a release / resume request; none means all (SGLang `ReleaseMemoryOccupationReqInput`). */
function tags(given: readonly string[] | null | undefined): MemoryTag[] {
  if (!given || given.length === 0) return [...MEMORY_TAGS];
  for (const t of given)
    if (!(MEMORY_TAGS as readonly string[]).includes(t))
      throw new EngineServerError(
        'INVALID_REQUEST',
        `memory tag ${JSON.stringify(t)} is not one this server releases; use ${MEMORY_TAGS.map((m) => `"${m}"`).join(' or ')}, or leave tags out for both`,
      );
  return given as MemoryTag[];
}

/**
 * Memory occupation, as colocated RL trainers drive it between rollout and training: SGLang's
 * `POST /release_memory_occupation` and `/resume_memory_occupation` (`http_server.py`, body
 * `{tags}`: "kv_cache", "weights", none for both; 200, empty body) and vLLM's dev-mode
 * `POST /sleep?level=` (level 1 releases both here: the weights stay in host memory either way),
 * `POST /wake_up?tags=` and `GET /is_sleeping` (`vllm/entrypoints/serve/sleep/api_router.py`).
 * See ServedEngine.release for what releasing means on this engine.
 */
export async function memoryRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  // 200 with an empty body, which verl's adapter (`_read_async_response`) reads as {}.
  const release = async (req: { body: unknown }, reply: FastifyReply) => {
    await ctx.served.release(tags(TagsSchema.parse(req.body ?? {}).tags));
    return reply.code(200).send();
  };
  const resume = async (req: { body: unknown }, reply: FastifyReply) => {
    ctx.served.resume(tags(TagsSchema.parse(req.body ?? {}).tags));
    return reply.code(200).send();
  };
  app.route({ method: ['GET', 'POST'], url: '/release_memory_occupation', handler: release });
  app.route({ method: ['GET', 'POST'], url: '/resume_memory_occupation', handler: resume });
  app.post('/sleep', async (_req, reply) => {
    await ctx.served.release(MEMORY_TAGS);
    return reply.code(200).send();
  });
  app.post('/wake_up', async (req, reply) => {
    const query = req.query as { tags?: string | string[] };
    const given = query.tags === undefined ? [] : ([] as string[]).concat(query.tags);
    ctx.served.resume(tags(given));
    return reply.code(200).send();
  });
  app.get('/is_sleeping', async () => ({ is_sleeping: ctx.served.released.size > 0 }));
}
