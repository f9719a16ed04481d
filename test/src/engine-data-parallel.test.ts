import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mpirunMissing } from '@agentrl/parallel';
import { withoutTiming } from 'agentrl';
import { afterAll, describe, expect, it } from 'vitest';
import { readJsonl, runCli, startServer } from './cli.js';
import { startFront } from './http-front.js';
import { checkpointHashes, mpirunTrain } from './mpi-train.js';

/**
 * `mpirun -n 2 agentrl train --engine URL` against `mpirun -n 1` with the same engine: a real
 * `agentrl serve` process behind a front that counts every connection and request. Rank 0 alone
 * rolls out on the server, scores, applies RoC and advantages per group, packs the micro-batches and
 * deals micro-batch i to rank i % 2; both ranks train their share, the float64 gradients are
 * all-reduced, both step; rank 0 syncs the weights to the server. The weights and metrics must be
 * those of one rank, bit for bit, and the server must see exactly the requests of the one-rank run:
 * rank 1 never talks to it.
 */
const missing = mpirunMissing();
if (missing) console.warn(`--engine data-parallel test skipped: ${missing}`);

const root = mkdtempSync(join(tmpdir(), 'agentrl-engine-dp-'));
const cleanup: Array<() => void> = [];
afterAll(() => {
  for (const c of cleanup) c();
  rmSync(root, { recursive: true, force: true });
});

describe.skipIf(missing !== undefined)('agentrl train --engine under mpirun', () => {
  it('2 ranks end with the weights and metrics of 1 rank; only rank 0 talks to the engine', async () => {
    // the smoke preset's SFT once, in one process: its policy answers some problems, so the RL
    // groups have mixed rewards and the steps below train on something
    const runs = join(root, 'runs');
    const sftArgs = ['--preset', 'smoke', '--runsDir', runs, '--name', 'sft', '--stop-after', '0'];
    const sft = await runCli(['train', ...sftArgs, '--no-progress'], { OMP_NUM_THREADS: '1' });
    expect(sft.code, sft.stderr).toBe(0);
    const init = join(runs, 'sft', 'checkpoints', 'step-000000');
    // one sequence per engine step: the server's numbers do not depend on what else it batches
    const { url, child } = await startServer(['--checkpoint', init, '--port', '0', '--max-batch', '1']);
    cleanup.push(() => child.kill('SIGKILL'));
    const front = await startFront(url);
    cleanup.push(() => void front.close());
    const args = (name: string) => [
      ...['train', '--preset', 'smoke', '--runsDir', runs, '--name', name, '--no-progress'],
      ...['--model.init', init, '--engine', front.url, '--engine.kind', 'sglang', '--sft.enabled', 'false'],
      ...['--rl.stages', '[{"name":"s1","steps":2,"maxResponseTokens":96}]'],
      // small micro-batches and buckets: both ranks train, and buckets start during the backward
      ...['--rl.microBatchTokens', '400', '--parallel.bucketMb', '0.01', '--eval.problems', '1'],
      ...['--checkpointEvery', '1'],
    ];

    const one = await mpirunTrain(1, args('n1'));
    expect(one.code, one.stderr).toBe(0);
    const traffic1 = front.take();
    const two = await mpirunTrain(2, args('n2'));
    expect(two.code, two.stderr).toBe(0);
    const traffic2 = front.take();
    expect(two.stdout.match(/done after 2 RL steps/g)).toHaveLength(1);

    // the same computation: bit-identical checkpoints, equal metrics (timings aside)
    const h1 = checkpointHashes(runs, 'n1');
    expect(Object.keys(h1).sort()).toEqual(['step-000000', 'step-000001', 'step-000002']);
    expect(checkpointHashes(runs, 'n2')).toEqual(h1);
    const m1 = readJsonl(join(runs, 'n1', 'metrics.jsonl'));
    expect(readJsonl(join(runs, 'n2', 'metrics.jsonl')).map(withoutTiming)).toEqual(m1.map(withoutTiming));
    const rl = m1.filter((r) => r.phase === 'rl');
    expect(rl).toHaveLength(2);
    // the steps trained (gradients flowed) and the weights moved between checkpoints
    expect(rl.filter((r) => (r.gradNorm as number) > 0).length).toBeGreaterThan(0);
    expect(new Set(Object.values(h1)).size).toBeGreaterThan(1);

    // rank 1 sent nothing: the server saw the one-rank run's requests exactly (any use of an engine,
    // even the start probe, is a request). TCP connections are compared loosely: the client's pool
    // opens one whenever all pooled ones are busy, which depends on timing (32 vs 33 in one CI run).
    const generate = Object.entries(traffic1.requests).filter(([k]) => k.includes('generate'));
    // smoke: 4 prompts x 8 samples a step, at least one turn each
    expect(generate.reduce((n, [, c]) => n + c, 0)).toBeGreaterThanOrEqual(2 * 4 * 8);
    expect(Object.keys(traffic1.requests).some((k) => k.includes('update_weights_from_disk'))).toBe(true);
    expect(traffic2.requests).toEqual(traffic1.requests);
    expect(traffic2.connections).toBeGreaterThan(0);
    expect(Math.abs(traffic2.connections - traffic1.connections)).toBeLessThanOrEqual(2);
  });
});
