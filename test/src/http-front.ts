import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP front on 127.0.0.1 for the server at `target`: forwards every request as it came, unless
 * `intercept` answers it (returns true after writing `res`), and counts TCP connections and requests
 * by `METHOD path`. What the live tests put between the trainer and `agentrl serve`.
 */
export async function startFront(
  target: string,
  intercept?: (req: IncomingMessage, body: Buffer, res: ServerResponse) => boolean,
) {
  const counts = { connections: 0, requests: {} as Record<string, number> };
  const server: Server = createServer(async (req, res) => {
    const key = `${req.method} ${req.url}`;
    counts.requests[key] = (counts.requests[key] ?? 0) + 1;
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    if (intercept?.(req, body, res)) return;
    const r = await fetch(`${target}${req.url}`, {
      method: req.method ?? 'GET',
      headers: { 'content-type': 'application/json' },
      ...(req.method === 'POST' ? { body } : {}),
    });
    res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
    res.end(Buffer.from(await r.arrayBuffer()));
  });
  server.on('connection', () => counts.connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** The counts since the last take(), then reset. */
    take() {
      const out = structuredClone(counts);
      counts.connections = 0;
      counts.requests = {};
      return out;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
