import type { FastifyReply } from 'fastify';

/**
 * Server-sent events as vLLM and SGLang frame them: one `data: <json>` event per chunk, then
 * `data: [DONE]`. The reply is written raw, so the route returns it to tell fastify it was sent.
 */
export function sendEvents(reply: FastifyReply, chunks: Iterable<unknown>): FastifyReply {
  reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const chunk of chunks) reply.raw.write(`data: ${JSON.stringify(chunk)}\n\n`);
  reply.raw.end('data: [DONE]\n\n');
  return reply;
}
