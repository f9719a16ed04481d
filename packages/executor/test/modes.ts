import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { EmbeddedPool } from '../src/embedded-pool.js';
import { HttpExecutor } from '../src/http-client.js';
import { RedisExecutor } from '../src/redis-client.js';
import type { Executor } from '../src/types.js';
import { exitOf, spawnBin, waitForLine, workerArgs } from './bin-process.js';
import { descendantsOf, startServeCli } from './processes.js';
import { testRedis } from './redis-server.js';

/** The three ways to run calls: in this process, behind `serve` (a second process), behind a Redis worker. */
export const MODES = ['embedded', 'http', 'redis'] as const;
export type ModeName = (typeof MODES)[number];

/** Pool settings as CLI flags and as options: one small lean fork server, so calls share it. */
export interface ModePool {
  timeoutMs: number;
  memoryMb: number;
  concurrency: number;
  maxOutputBytes?: number;
  networkPerCall?: boolean;
  readOnly?: string[];
  pythonPath?: string[];
}

export interface RunningMode {
  name: ModeName;
  ex: Executor;
  /** Process ids of the fork servers' Python processes (for descriptor and memory checks). */
  forkServers(): number[];
  /** The raw URL of the HTTP server (http mode only), for requests the client would refuse to send. */
  url?: string;
  stop(): Promise<void>;
}

function flags(p: ModePool): string[] {
  const out = ['--servers', '1', '--preload', '', '--concurrency', String(p.concurrency)];
  out.push('--timeout-ms', String(p.timeoutMs), '--memory-mb', String(p.memoryMb));
  if (p.maxOutputBytes !== undefined) out.push('--max-output-bytes', String(p.maxOutputBytes));
  if (p.networkPerCall === false) out.push('--network-per-call', 'off');
  for (const path of p.readOnly ?? []) out.push('--read-only', path);
  for (const path of p.pythonPath ?? []) out.push('--pythonpath', path);
  return out;
}

/** Python fork-server processes below `roots` (bwrap's children running forkserver.py, not their calls). */
export function forkServerPythons(roots: readonly number[]): number[] {
  return descendantsOf(roots).filter((pid) => {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppidCmd = readFileSync(
        `/proc/${stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]}/cmdline`,
        'utf8',
      );
      return cmd.includes('forkserver.py') && !ppidCmd.includes('forkserver.py');
    } catch {
      return false;
    }
  });
}

/** Open descriptors of these processes together. */
export function openFds(pids: readonly number[]): number {
  return pids.reduce((n, pid) => n + readdirSync(`/proc/${pid}/fd`).length, 0);
}

async function stopProc(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
  await exitOf(proc);
  clearTimeout(timer);
}

/** Starts one mode with these pool settings; the caller stops it. */
export async function startMode(name: ModeName, p: ModePool): Promise<RunningMode> {
  if (name === 'embedded') {
    const pool = await new EmbeddedPool({
      servers: 1,
      preload: [],
      concurrency: p.concurrency,
      timeoutMs: p.timeoutMs,
      memoryMb: p.memoryMb,
      ...(p.maxOutputBytes !== undefined && { maxOutputBytes: p.maxOutputBytes }),
      ...(p.networkPerCall !== undefined && { networkPerCall: p.networkPerCall }),
      extraReadOnly: p.readOnly ?? [],
      pythonPath: p.pythonPath ?? [],
    }).start();
    const roots = () => pool.serverPids.filter((x): x is number => x !== undefined);
    return { name, ex: pool, forkServers: () => forkServerPythons(roots()), stop: () => pool.close() };
  }
  if (name === 'http') {
    const { url, proc } = await startServeCli(flags(p));
    const ex = new HttpExecutor({ url, lingerMs: 1 });
    return {
      name,
      ex,
      url,
      forkServers: () => forkServerPythons([proc.pid as number]),
      async stop() {
        await ex.close();
        await stopProc(proc);
      },
    };
  }
  const redis = await testRedis();
  const worker = spawnBin([...workerArgs(redis.url, redis.prefix, p.concurrency), ...flags(p).slice(6)]);
  await waitForLine(worker, /taking jobs/);
  const ex = await new RedisExecutor({ redis: redis.url, prefix: redis.prefix, lingerMs: 1 }).connect();
  return {
    name,
    ex,
    forkServers: () => forkServerPythons([worker.pid as number]),
    async stop() {
      await ex.close();
      await stopProc(worker);
      await redis.stop();
    },
  };
}
