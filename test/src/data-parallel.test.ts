import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mpirunMissing } from '@agentrl/parallel';
import { PRESETS, withoutTiming } from 'agentrl';
import { afterAll, describe, expect, it } from 'vitest';
import { readJsonl, waitFor } from './cli.js';
import { checkpointHashes as hashesOf, mpirunTrain } from './mpi-train.js';

/**
 * `mpirun -n 2 agentrl train --preset smoke` against `mpirun -n 1` on the same global batch: real
 * processes under Open MPI. Each rank rolls out its block of the step's prompts, the groups are
 * gathered, every rank trains its share of the micro-batches, gradients are all-reduced in float64;
 * the checkpoints must be bit-identical and the metrics equal (timings aside). Skipped, with the
 * reason, where mpirun or Open MPI is missing (CI installs them).
 */
const missing = mpirunMissing();
if (missing) console.warn(`data-parallel training test skipped: ${missing}`);

const runs = mkdtempSync(join(tmpdir(), 'agentrl-dp-'));
afterAll(() => rmSync(runs, { recursive: true, force: true }));

const checkpointHashes = (name: string) => hashesOf(runs, name);

// small micro-batches: every SFT and RL step has several, so both ranks compute gradients
const fresh = (name: string, ...more: string[]) => [
  ...['train', '--preset', 'smoke', '--runsDir', runs, '--name', name, '--no-progress'],
  ...['--rl.microBatchTokens', '400', ...more],
];

describe.skipIf(missing !== undefined)('agentrl train under mpirun (data-parallel)', () => {
  it('2 ranks end with the weights and metrics of 1 rank on the same global batch; rank 0 alone writes', async () => {
    const one = await mpirunTrain(1, fresh('n1'));
    expect(one.code, one.stderr).toBe(0);
    const two = await mpirunTrain(2, fresh('n2'));
    expect(two.code, two.stderr).toBe(0);
    // rank 0 speaks for the job: one summary, one run line
    expect(two.stdout.match(/done after 4 RL steps/g)).toHaveLength(1);
    expect(two.stderr.match(/^run .*: \d+ training \/ \d+ held-out problems$/gm)).toHaveLength(1);

    const h1 = checkpointHashes('n1');
    const h2 = checkpointHashes('n2');
    expect(Object.keys(h1).sort()).toEqual(['step-000000', 'step-000002', 'step-000004']);
    expect(h2).toEqual(h1);
    // each run records its world: the rank count, the threads, the CPU kernel path and the commit
    const world = (name: string) => JSON.parse(readFileSync(join(runs, name, 'config.json'), 'utf8')).world;
    expect(world('n1').ranks).toBe(1);
    expect(world('n2').ranks).toBe(2);
    expect(world('n2').threads).toBeGreaterThan(0);
    expect(['avx512', 'avx2', 'portable']).toContain(world('n2').cpuKernels.active);
    expect(world('n2').commit).toMatch(/^[0-9a-f]{40}$/);

    const m1 = readJsonl(join(runs, 'n1', 'metrics.jsonl'));
    const m2 = readJsonl(join(runs, 'n2', 'metrics.jsonl'));
    expect(m2.map(withoutTiming)).toEqual(m1.map(withoutTiming));
    // the SFT steps and the RL steps updated the model (the smoke preset's RL groups have mixed rewards)
    const sft = m1.filter((r) => r.phase === 'sft');
    expect(sft).toHaveLength(PRESETS.smoke.sft.steps);
    for (const r of sft) expect(r.gradNorm as number).toBeGreaterThan(0);
    expect(sft.at(-1)!.loss as number).toBeLessThan(sft[0]!.loss as number);
    const rl = m1.filter((r) => r.phase === 'rl');
    expect(rl.filter((r) => (r.gradNorm as number) > 0).length).toBeGreaterThan(0);
  });

  it('--resume works with the same number of ranks, and the checkpoint loads with another', async () => {
    const stop = await mpirunTrain(2, fresh('r2', '--stop-after', '2'));
    expect(stop.code, stop.stderr).toBe(0);
    cpSync(join(runs, 'r2'), join(runs, 'r2to1'), { recursive: true });
    const same = await mpirunTrain(2, ['train', '--resume', join(runs, 'r2'), '--no-progress']);
    expect(same.code, same.stderr).toBe(0);
    const other = await mpirunTrain(1, ['train', '--resume', join(runs, 'r2to1'), '--no-progress']);
    expect(other.code, other.stderr).toBe(0);
    const ref = checkpointHashes('n1');
    expect(checkpointHashes('r2')).toEqual(ref);
    expect(checkpointHashes('r2to1')).toEqual(ref);
    // the resumed process's world is added to the first one: 2 ranks, then 1
    const resumes = JSON.parse(readFileSync(join(runs, 'r2to1', 'config.json'), 'utf8')).world.resumes;
    expect(resumes.map((w: { ranks: number; rlStep: number }) => [w.ranks, w.rlStep])).toEqual([[1, 2]]);
    const m = readJsonl(join(runs, 'n1', 'metrics.jsonl')).map(withoutTiming);
    expect(readJsonl(join(runs, 'r2', 'metrics.jsonl')).map(withoutTiming)).toEqual(m);
  });

  it('a rank killed with SIGKILL mid-run takes the training job down with a message instead of hanging', async () => {
    let mpirunPid = 0;
    const running = mpirunTrain(2, fresh('killed'), (pid) => {
      mpirunPid = pid;
    });
    // SFT has started once rank 0 has written a metrics line; the ranks are mpirun's children
    await waitFor(
      () => readJsonl(join(runs, 'killed', 'metrics.jsonl')).length > 0,
      120_000,
      'the first SFT step',
    );
    const ranks = readFileSync(`/proc/${mpirunPid}/task/${mpirunPid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    expect(ranks).toHaveLength(2);
    const killedAt = Date.now();
    process.kill(ranks[1]!, 'SIGKILL');
    const r = await running;
    expect(Date.now() - killedAt).toBeLessThan(20_000);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/rank \d with PID \d+ .*exited on signal 9 \(Killed\)/s);
    expect(r.stdout).not.toContain('done after');
  });
});
