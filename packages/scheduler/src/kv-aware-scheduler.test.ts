import type { SchedulerLease } from '@agentrl/rollout';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SchedulerError } from './errors.js';
import { createKvAwareScheduler } from './kv-aware-scheduler.js';
import { createStaticScheduler } from './static-scheduler.js';

const flush = () => new Promise((r) => setImmediate(r));

describe('createKvAwareScheduler', () => {
  it('places each trajectory on the engine with the most free KV capacity', async () => {
    const s = createKvAwareScheduler([
      { engine: 'a', capacityTokens: 100 },
      { engine: 'b', capacityTokens: 300 },
    ]);
    const l1 = await s.acquire(150);
    const l2 = await s.acquire(60);
    const l3 = await s.acquire(60);
    expect([l1.engine, l2.engine, l3.engine]).toEqual(['b', 'b', 'a']);
    expect(s.snapshot().reserved).toEqual([60, 210]);
  });

  it('waits without polling when full and wakes FIFO on release', async () => {
    const s = createKvAwareScheduler([{ engine: 'a', capacityTokens: 100 }]);
    const first = await s.acquire(80);
    const order: number[] = [];
    const w1 = s.acquire(50).then((l) => {
      order.push(1);
      return l;
    });
    const w2 = s.acquire(10).then((l) => {
      order.push(2);
      return l;
    });
    await flush();
    expect(order).toEqual([]); // 10 would fit, but FIFO keeps the head's place
    expect(s.snapshot().waiting).toBe(2);
    first.release();
    first.release(); // idempotent
    await Promise.all([w1, w2]);
    expect(order).toEqual([1, 2]);
    expect(s.snapshot().reserved).toEqual([60]);
  });

  it('wakes waiters when an engine reports more capacity, and rejects what can never fit', async () => {
    const s = createKvAwareScheduler([{ engine: 'a', capacityTokens: 100 }]);
    await s.acquire(100);
    const waiting = s.acquire(50);
    s.setCapacity(0, 200);
    expect((await waiting).engine).toBe('a');
    await expect(s.acquire(500)).rejects.toMatchObject({ code: 'SCHEDULER_NO_CAPACITY' });
  });

  it('cancels a wait on abort', async () => {
    const s = createKvAwareScheduler([{ engine: 'a', capacityTokens: 10 }]);
    await s.acquire(10);
    const ac = new AbortController();
    const p = s.acquire(5, ac.signal);
    ac.abort();
    await expect(p).rejects.toBeInstanceOf(SchedulerError);
    expect(s.snapshot().waiting).toBe(0);
  });

  it('never over-reserves an engine and grants every request once others release', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 10, max: 200 }), { minLength: 1, maxLength: 5 }),
        fc.array(fc.tuple(fc.integer({ min: 1, max: 150 }), fc.integer({ min: 0, max: 3 })), {
          maxLength: 60,
        }),
        async (caps, requests) => {
          const s = createKvAwareScheduler(caps.map((c, i) => ({ engine: i, capacityTokens: c })));
          const check = () => {
            const snap = s.snapshot();
            for (const [i, r] of snap.reserved.entries()) expect(r).toBeLessThanOrEqual(snap.capacity[i]!);
          };
          const fits = requests.filter(([t]) => t <= Math.max(...caps));
          const leases = fits.map(async ([tokens, hold]) => {
            const lease: SchedulerLease<number> = await s.acquire(tokens);
            check();
            for (let i = 0; i < hold; i++) await flush();
            lease.release();
            check();
          });
          await Promise.all(leases);
          expect(s.snapshot().reserved.every((r) => r === 0)).toBe(true);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('createStaticScheduler', () => {
  it('splits round-robin whatever the load', async () => {
    const s = createStaticScheduler([
      { engine: 'a', capacityTokens: 1 },
      { engine: 'b', capacityTokens: 1 },
    ]);
    const picks = [];
    for (let i = 0; i < 5; i++) picks.push((await s.acquire(1000)).engine);
    expect(picks).toEqual(['a', 'b', 'a', 'b', 'a']);
  });
});
