import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCharTokenizer, createModel, saveModel } from '@agentrl/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServer } from './cli.js';

const config = (vocab: number) => ({
  architectures: ['Qwen3ForCausalLM'],
  vocab_size: vocab,
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 1,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  head_dim: 16,
  max_position_embeddings: 256,
  tie_word_embeddings: true,
});

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentrl-serve-cli-'));
  await saveModel(createModel(config(createCharTokenizer().vocabSize), { seed: 1 }), join(dir, 'tiny'));
  await saveModel(createModel(config(1000), { seed: 1 }), join(dir, 'no-tokenizer'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('agentrl serve --checkpoint DIR', () => {
  it("serves a tiny checkpoint (the trainer's char tokenizer) under the given model name", async () => {
    const { url, child } = await startServer([
      '--checkpoint',
      join(dir, 'tiny'),
      '--port',
      '0',
      '--served-model-name',
      'tiny',
    ]);
    try {
      const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: Array<{ id: string }> };
      expect(models.data.map((m) => m.id)).toEqual(['tiny']);
    } finally {
      child.kill('SIGTERM');
      expect((await child.result).code).toBe(0);
    }
  }, 120_000);

  it('refuses a checkpoint without tokenizer.json that is not a char-tokenizer one, naming the file', async () => {
    const r = await runCli(['serve', '--checkpoint', join(dir, 'no-tokenizer'), '--port', '0']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /has no tokenizer\.json and its vocab_size 1000 .*copy the model's tokenizer\.json/,
    );
    const usage = await runCli(['serve']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--checkpoint DIR is required/);
  }, 120_000);
});
