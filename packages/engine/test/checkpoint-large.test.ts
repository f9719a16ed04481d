import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packSequences } from '../src/batch.js';
import { loadModel, saveModel } from '../src/checkpoint.js';
import { createModel } from '../src/model.js';

const root = await mkdtemp(join(tmpdir(), 'agentrl-large-'));
afterAll(() => rm(root, { recursive: true, force: true }));

/** Compares two files 16 MiB at a time (never a whole file in memory). */
async function sameBytes(a: string, b: string): Promise<boolean> {
  const [fa, fb] = [await open(a, 'r'), await open(b, 'r')];
  try {
    const [sa, sb] = [await fa.stat(), await fb.stat()];
    if (sa.size !== sb.size) return false;
    const ba = Buffer.alloc(16 << 20);
    const bb = Buffer.alloc(16 << 20);
    for (let at = 0; at < sa.size; at += ba.length) {
      const n = Math.min(ba.length, sa.size - at);
      await fa.read(ba, 0, n, at);
      await fb.read(bb, 0, n, at);
      if (!ba.subarray(0, n).equals(bb.subarray(0, n))) return false;
    }
    return true;
  } finally {
    await fa.close();
    await fb.close();
  }
}

describe('checkpoints over 2 GiB', () => {
  it('a 2.02 GiB fp32 checkpoint (one 2 GiB tensor) round-trips byte-identical, streamed', async () => {
    // embed_tokens alone is 524288 x 1024 fp32 = exactly 2 GiB: past every 32-bit length and offset
    const config = {
      architectures: ['Qwen3ForCausalLM'],
      vocab_size: 524288,
      hidden_size: 1024,
      intermediate_size: 64,
      num_hidden_layers: 1,
      num_attention_heads: 8,
      num_key_value_heads: 8,
      head_dim: 128,
      tie_word_embeddings: true,
    };
    const a = join(root, 'a');
    const b = join(root, 'b');
    const batch = packSequences([[3, 524287, 77]]);
    let expected: Float32Array;
    {
      const model = createModel(config, { seed: 11, training: false });
      expect(model.memoryBytes().params).toBeGreaterThan(2 ** 31);
      expected = model.forwardLogits(batch).slice(0, 1024);
      await saveModel(model, a);
    }
    expect((await stat(join(a, 'model.safetensors'))).size).toBeGreaterThan(2 ** 31);
    const loaded = await loadModel(a, { training: false });
    expect(loaded.memoryBytes()).toMatchObject({ grads: 0, optimizer: 0 });
    expect(
      Buffer.from(loaded.forwardLogits(batch).slice(0, 1024).buffer).equals(Buffer.from(expected.buffer)),
    ).toBe(true);
    await saveModel(loaded, b);
    expect(await sameBytes(join(a, 'model.safetensors'), join(b, 'model.safetensors'))).toBe(true);
    await rm(a, { recursive: true });
    await rm(b, { recursive: true });
  }, 900_000);
});
