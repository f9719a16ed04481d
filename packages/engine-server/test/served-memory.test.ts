import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createModel, packSequences, saveModel } from '@agentrl/engine';
import { charModelConfig } from '@agentrl/engine/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCheckpoint } from '../src/open-checkpoint.js';
import { ServedEngine } from '../src/served-engine.js';

const config = charModelConfig();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentrl-served-memory-'));
  await saveModel(createModel(config, { seed: 1 }), join(dir, 'a'));
  await saveModel(createModel(config, { seed: 2 }), join(dir, 'b'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('a served model holds weights only', () => {
  it('opens without gradients or Adam moments, serves logprobs, and a weight reload keeps it so', async () => {
    const open = await openCheckpoint(join(dir, 'a'));
    const memory = open.model.memoryBytes();
    expect(memory.params).toBeGreaterThan(0);
    expect(memory).toEqual({ params: memory.params, grads: 0, optimizer: 0 });
    const served = new ServedEngine(open.model, open.tokenizer, join(dir, 'a'));
    const seq = [5, 17, 99, 3, 42];
    // the prompt-logprob forward runs on a model without training buffers
    const before = served.positionLogprobs(seq, 1).map((p) => p.logprob);
    await served.reload(join(dir, 'b'), '1');
    expect(open.model.memoryBytes()).toEqual(memory);
    const after = served.positionLogprobs(seq, 1).map((p) => p.logprob);
    const b = createModel(config, { seed: 2 });
    const logits = b.forwardLogits(packSequences([seq]));
    const V = config.vocab_size;
    after.forEach((lp, i) => {
      const row = logits.subarray(i * V, (i + 1) * V);
      const max = Math.max(...row);
      const logZ = max + Math.log(row.reduce((s, x) => s + Math.exp(x - max), 0));
      expect(Math.abs(lp - (row[seq[i + 1]!]! - logZ))).toBeLessThan(1e-5);
    });
    expect(Math.max(...after.map((x, i) => Math.abs(x - before[i]!)))).toBeGreaterThan(1e-3);
    await served.close();
  });
});
