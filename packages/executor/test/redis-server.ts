import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/** A free loopback port (bound and released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** A redis-server this test owns: it can be stopped and restarted on the same port (no persistence). */
export class OwnedRedis {
  private proc: ChildProcess | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), 'agentrl-redis-'));

  private constructor(readonly port: number) {}

  static async start(): Promise<OwnedRedis> {
    const r = new OwnedRedis(await freePort());
    await r.up();
    return r;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async up(): Promise<void> {
    this.proc = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.dir,
      ],
      { stdio: 'ignore' },
    );
    const probe = new Redis(this.url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    probe.on('error', () => {});
    for (let i = 0; i < 100; i++) {
      try {
        await probe.connect();
        await probe.ping();
        probe.disconnect();
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    probe.disconnect();
    throw new Error(`redis-server did not start on port ${this.port}; is redis-server installed?`);
  }

  async down(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
    this.proc = undefined;
  }

  async stop(): Promise<void> {
    await this.down();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The Redis for ordinary tests: CI's (AGENTRL_REDIS_URL) when set, else one started here; either way a
 * per-run key prefix keeps runs apart.
 */
export async function testRedis(): Promise<{ url: string; prefix: string; stop: () => Promise<void> }> {
  const prefix = `agentrl-test:${randomUUID().slice(0, 8)}:`;
  const external = process.env.AGENTRL_REDIS_URL;
  if (external) {
    return {
      url: external,
      prefix,
      stop: async () => {
        const r = new Redis(external);
        const keys = await r.keys(`${prefix}*`);
        if (keys.length > 0) await r.del(...keys);
        r.disconnect();
      },
    };
  }
  const owned = await OwnedRedis.start();
  return { url: owned.url, prefix, stop: () => owned.stop() };
}
