import type { FastifyReply } from 'fastify';

/** An open server-sent-events reply: chunks leave as they are sent. */
export interface EventStream {
  send(chunk: unknown): void;
  /** Writes `data: [DONE]` and ends the reply. */
  end(): void;
  /** Whether the client went away (its requests should be aborted). */
  readonly closed: boolean;
  onClose(listener: () => void): void;
}

/**
 * Server-sent events as vLLM and SGLang frame them: one `data: <json>` event per chunk, then
 * `data: [DONE]`. The reply is written raw, so the route returns it to tell fastify it was sent.
 */
export function openEvents(reply: FastifyReply): EventStream {
  reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  reply.raw.flushHeaders();
  let closed = false;
  const listeners: Array<() => void> = [];
  reply.raw.on('close', () => {
    if (reply.raw.writableEnded) return;
    closed = true;
    for (const l of listeners) l();
  });
  return {
    send(chunk) {
      if (!closed) reply.raw.write(`data: ${JSON.stringify(chunk)}\n\n`);
    },
    end() {
      if (!closed) reply.raw.end('data: [DONE]\n\n');
    },
    get closed() {
      return closed;
    },
    onClose(listener) {
      listeners.push(listener);
    },
  };
}

/** A finished list of chunks as one event stream (SGLang's `/generate`, which sends each prompt's final chunk). */
export function sendEvents(reply: FastifyReply, chunks: Iterable<unknown>): FastifyReply {
  const events = openEvents(reply);
  for (const chunk of chunks) events.send(chunk);
  events.end();
  return reply;
}
