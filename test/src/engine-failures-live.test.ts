import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createModel, saveModel } from '@agentrl/engine';
import { charModelConfig } from '@agentrl/engine/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { readJsonl, runCli, startServer } from './cli.js';
import { startFront } from './http-front.js';

/**
 * Engine failures in a live run: `agentrl serve` as a separate process behind a small HTTP front
 * that answers every third rollout request (temperature 1; eval samples at 0.6) with a 500, as a
 * server that crashes mid-request would. The trainer must leave exactly those trajectories out of
 * the loss, count them in metrics.jsonl, and still train on the rest.
 */
const root = mkdtempSync(join(tmpdir(), 'agentrl-engine-failures-'));
const cleanup: Array<() => void> = [];
afterAll(() => {
  for (const c of cleanup) c();
  rmSync(root, { recursive: true, force: true });
});

/** Proxies to `target`; every third POST /generate at temperature 1 gets a 500 instead. */
async function failingFront(target: string) {
  let rollouts = 0;
  const failed: number[] = [];
  const front = await startFront(target, (req, body, res) => {
    if (req.method !== 'POST' || req.url !== '/generate') return false;
    const parsed = JSON.parse(body.toString()) as { sampling_params?: { temperature?: number } };
    if (parsed.sampling_params?.temperature !== 1 || ++rollouts % 3 !== 0) return false;
    failed.push(rollouts);
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'error', message: 'injected failure', code: 500 }));
    return true;
  });
  cleanup.push(() => void front.close());
  return { url: front.url, failures: () => failed.length, rollouts: () => rollouts };
}

describe('trajectories the engine failed, in a live RL run', () => {
  it('are excluded from the loss and counted per step in metrics.jsonl', async () => {
    const init = join(root, 'init');
    await saveModel(createModel(charModelConfig({ max_position_embeddings: 640 }), { seed: 11 }), init);
    const { url, child } = await startServer(['--checkpoint', init, '--port', '0']);
    cleanup.push(() => child.kill('SIGKILL'));
    const front = await failingFront(url);
    const runs = join(root, 'runs');
    const r = await runCli([
      'train',
      '--preset',
      'smoke',
      '--runsDir',
      runs,
      '--name',
      'f',
      '--no-progress',
      '--model.init',
      init,
      '--engine',
      front.url,
      '--engine.kind',
      'sglang',
      '--engine.maxFailedFraction',
      '0.9',
      '--sft.enabled',
      'false',
      '--rl.stages',
      '[{"name":"s1","steps":2,"maxResponseTokens":48}]',
      '--rl.rejectEqualReward',
      'false',
      '--rl.maxTurns',
      '1',
      // pinned here, not taken from the smoke preset, so the request counts below stay exact
      '--rl.promptsPerStep',
      '2',
      '--rl.oversample',
      '4',
      '--rl.n',
      '2',
      // the front tells rollouts from eval by temperature (the smoke preset samples rollouts at 0.6)
      '--rl.temperature',
      '1',
      '--eval.problems',
      '1',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const rl = readJsonl(join(runs, 'f', 'metrics.jsonl')).filter((m) => m.phase === 'rl');
    expect(rl.map((m) => m.step)).toEqual([1, 2]);
    // one trajectory per rollout request (one turn each): every injected 500 is one failed trajectory
    const perStep = 2 * 4; // promptsPerStep x oversample as pinned above (RoC then keeps n = 2 of 4)
    expect(front.rollouts()).toBe(2 * perStep);
    expect(front.failures()).toBe(Math.floor((2 * perStep) / 3));
    const failed = rl.map((m) => m.engineFailedTrajectories as number);
    expect(failed.reduce((a, b) => a + b, 0)).toBe(front.failures());
    for (const [i, m] of rl.entries()) {
      expect(failed[i]).toBeGreaterThan(0);
      // what RoC kept came from the trajectories that did not fail, and the step trained on them
      expect(m.trajectoriesKept as number).toBeGreaterThan(0);
      expect(m.trajectoriesKept as number).toBeLessThanOrEqual(perStep - failed[i]!);
      expect(m.trainTokens as number).toBeGreaterThan(0);
      expect(m.policyVersion).toBe(i);
    }
  });
});
