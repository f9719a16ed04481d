import { connect } from 'node:net';

/**
 * Opens and closes one TCP connection to the host:port of `url`. Resolves null when it connects,
 * else the reason (ECONNREFUSED, ENOTFOUND, timeout). Client libraries that reconnect forever
 * (ioredis) would otherwise hang the start of a run on a dead address.
 */
export function probeTcp(url: string, timeoutMs = 5000): Promise<string | null> {
  let host: string;
  let port: number;
  try {
    const u = new URL(url);
    host = u.hostname.replace(/^\[|\]$/g, '');
    port = Number(u.port || { 'redis:': 6379, 'rediss:': 6380, 'http:': 80, 'https:': 443 }[u.protocol] || 0);
  } catch {
    return Promise.resolve(`"${url}" is not a URL`);
  }
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (why: string | null) => {
      socket.destroy();
      clearTimeout(timer);
      resolve(why);
    };
    const timer = setTimeout(() => done(`no answer within ${timeoutMs} ms`), timeoutMs);
    socket.once('connect', () => done(null));
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
  });
}
