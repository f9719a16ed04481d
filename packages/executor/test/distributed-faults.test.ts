import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { HttpExecutor } from '../src/http-client.js';
import type { RunResult } from '../src/types.js';
import { exitOf, spawnBin, waitForLine, workerArgs } from './bin-process.js';
import { sleep } from './processes.js';
import { freePort, OwnedRedis } from './redis-server.js';

/** Polls `check` every 25 ms until it holds; fails naming `what` after `ms`. */
async function until(
  what: string | (() => string),
  ms: number,
  check: () => boolean | Promise<boolean>,
): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) {
      throw new Error(`timed out after ${ms} ms waiting for ${typeof what === 'string' ? what : what()}`);
    }
    await sleep(25);
  }
}

/**
 * The distributed executor as deployed: an HTTP front end and workers in processes of their own, one
 * Redis. Mid-run, by progress rather than by the clock (so a slow machine changes the timing, not the
 * story): a worker is SIGKILLed and replaced, the front end is SIGKILLed and restarted, Redis is killed
 * and restarted empty, the other worker is SIGKILLed and replaced.
 */
describe('distributed executor under SIGKILL and an empty Redis restart', () => {
  it('answers every job exactly once and leaves no answer unread in Redis', async () => {
    const redis = await OwnedRedis.start();
    const prefix = 'faults:';
    const port = await freePort();
    const procs: ChildProcess[] = [];
    const probe = new Redis(redis.url, { maxRetriesPerRequest: null });
    probe.on('error', () => {});
    const worker = async () => {
      const proc = spawnBin(
        workerArgs(redis.url, prefix, 2, '--visibility-ms', '2500', '--reap-after-ms', '5000'),
      );
      procs.push(proc);
      const line = await waitForLine(proc, /worker (\S+) taking jobs/);
      return { proc, consumer: (/worker (\S+)/.exec(line) as RegExpExecArray)[1] as string };
    };
    const frontEnd = async () => {
      const proc = spawnBin([
        'serve',
        '--port',
        String(port),
        '--redis',
        redis.url,
        '--prefix',
        prefix,
        '--lease-ms',
        '3000',
      ]);
      procs.push(proc);
      await waitForLine(proc, /serving on/);
      return proc;
    };
    const client = new HttpExecutor({
      url: `http://127.0.0.1:${port}`,
      batchSize: 4,
      lingerMs: 1,
      answerSlackMs: 60_000,
    });
    try {
      const [a, b, front] = await Promise.all([worker(), worker(), frontEnd()]);
      const N = 64;
      let answered = 0;
      const calls = Array.from({ length: N }, (_, i) =>
        client
          .run({ code: `import time\ntime.sleep(0.1)\nprint(${i})`, timeoutMs: 5000 })
          .then((r: RunResult) => {
            answered++;
            return r;
          }),
      );
      const consumers = async () =>
        ((await probe.xinfo('CONSUMERS', `${prefix}jobs`, 'workers').catch(() => [])) as string[][]).map(
          (c) => c[1],
        );
      const progress = (n: number) =>
        until(
          () => `${n} answers (${answered} so far)`,
          45_000,
          () => answered >= n,
        );

      await progress(6);
      a.proc.kill('SIGKILL');
      const a2 = worker();
      await progress(16);
      front.kill('SIGKILL');
      await sleep(200);
      const front2 = await frontEnd();
      await progress(28);
      await redis.down();
      await sleep(300);
      await redis.up();
      await progress(40);
      await until('worker B to take jobs in the new Redis', 10_000, async () =>
        (await consumers()).includes(b.consumer),
      );
      b.proc.kill('SIGKILL');
      const b2 = worker();
      const results = await Promise.all(calls);

      // Exactly once: each call has one answer, its own, and nothing failed.
      expect(results.map((r) => [r.status, r.stdout])).toEqual(
        Array.from({ length: N }, (_, i) => ['ok', `${i}\n`]),
      );
      expect(client.stats().calls).toBe(N);
      expect(client.resent).toBeGreaterThan(0); // the killed front end's calls went to its successor

      // The killed worker's consumer is removed from the group; only live workers are left in it.
      const live = [(await a2).consumer, (await b2).consumer];
      let names: (string | undefined)[] = [];
      await until('the dead consumer to be reaped', 15_000, async () => {
        names = await consumers();
        return !names.includes(b.consumer);
      }).catch((e: Error) => {
        throw new Error(`${e.message}: consumers ${names.join(', ')}; live ${live.join(', ')}`);
      });
      expect(names.every((n) => live.includes(n as string))).toBe(true);

      // Nothing left to read: the killed front end's lease and reply stream expired, the stopped one's
      // were removed, and every job entry (the orphans of the killed front end included) is gone.
      await client.close();
      front2.kill('SIGTERM');
      expect((await exitOf(front2)).code).toBe(0);
      const leftovers = async () =>
        (await probe.keys(`${prefix}*`)).filter(
          (k) => !k.startsWith(`${prefix}done:`) && k !== `${prefix}jobs`,
        );
      await until('no reply stream or lease left', 8_000, async () => (await leftovers()).length === 0);
      await until('the job stream to drain', 10_000, async () => (await probe.xlen(`${prefix}jobs`)) === 0);
      const [pendingCount] = (await probe.xpending(`${prefix}jobs`, 'workers')) as [number];
      expect(pendingCount).toBe(0);
    } finally {
      for (const p of procs) p.kill('SIGKILL');
      probe.disconnect();
      await client.close();
      await redis.stop();
    }
  }, 150_000); // about 20 s on an idle 2-core machine; the bound is for a badly loaded one
});
