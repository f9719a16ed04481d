import { mkdtemp, readdir, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packSequences } from '../src/batch.js';
import { loadModel, loadOptimizerState, saveModel, saveOptimizerState } from '../src/checkpoint.js';
import { createModel } from '../src/model.js';
import { createAdamW } from '../src/optimizer.js';
import { tinyConfig } from './helpers.js';

const root = await mkdtemp(join(tmpdir(), 'agentrl-engine-'));
afterAll(() => rm(root, { recursive: true, force: true }));

async function filesOf(dir: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for (const f of (await readdir(dir)).sort()) out.set(f, await readFile(join(dir, f)));
  return out;
}

describe('checkpoints', () => {
  for (const dtype of ['float32', 'bfloat16'] as const) {
    for (const shard of [false, true]) {
      it(`save, load, save gives byte-identical files (${dtype}${shard ? ', sharded' : ''})`, async () => {
        const model = createModel(
          tinyConfig({ architectures: ['Qwen2ForCausalLM'], tie_word_embeddings: false }),
          { seed: 1 },
        );
        const a = join(root, `${dtype}-${shard}-a`);
        const b = join(root, `${dtype}-${shard}-b`);
        const opts = { dtype, ...(shard ? { maxShardBytes: 8_000 } : {}) };
        await saveModel(model, a, opts);
        const loaded = await loadModel(a);
        await saveModel(loaded, b, opts);
        const fa = await filesOf(a);
        const fb = await filesOf(b);
        expect([...fa.keys()]).toEqual([...fb.keys()]);
        if (shard) expect(fa.has('model.safetensors.index.json')).toBe(true);
        for (const [name, bytes] of fa) expect(bytes.equals(fb.get(name) as Buffer), name).toBe(true);
        const batch = packSequences([[1, 2, 3]]);
        const la = model.forwardLogits(batch);
        const lb = loaded.forwardLogits(batch);
        if (dtype === 'float32') expect(Buffer.from(lb.buffer).equals(Buffer.from(la.buffer))).toBe(true);
        else
          lb.forEach((v, i) => {
            expect(v).toBeCloseTo(la[i] ?? 0, 1);
          });
      });
    }
  }

  it('writes a valid safetensors header (8-byte aligned JSON with HF names)', async () => {
    const dir = join(root, 'header');
    await saveModel(createModel(tinyConfig(), { seed: 2 }), dir);
    const bytes = await readFile(join(dir, 'model.safetensors'));
    const n = Number(bytes.readBigUInt64LE(0));
    expect(n % 8).toBe(0);
    const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
    expect(header['model.layers.0.self_attn.q_norm.weight']).toEqual({
      dtype: 'F32',
      shape: [8],
      data_offsets: expect.any(Array),
    });
    expect(header['lm_head.weight']).toBeUndefined();
    expect(JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')).architectures).toEqual([
      'Qwen3ForCausalLM',
    ]);
  });

  it('refuses truncated files, unknown architectures, wrong shapes and missing tensors with clear messages', async () => {
    const model = createModel(tinyConfig(), { seed: 3 });
    const dir = join(root, 'bad');
    await saveModel(model, dir);
    const good = await readFile(join(dir, 'model.safetensors'));
    await truncate(join(dir, 'model.safetensors'), good.length - 10);
    await expect(loadModel(dir)).rejects.toMatchObject({
      code: 'ENGINE_CHECKPOINT_TRUNCATED',
      message: expect.stringMatching(/truncated/),
    });
    await writeFile(join(dir, 'model.safetensors'), good);

    const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
    await writeFile(
      join(dir, 'config.json'),
      JSON.stringify({ ...config, architectures: ['GPT2LMHeadModel'] }),
    );
    await expect(loadModel(dir)).rejects.toMatchObject({
      code: 'ENGINE_UNSUPPORTED_ARCHITECTURE',
      message: expect.stringMatching(/GPT2LMHeadModel.*supported/),
    });

    await writeFile(join(dir, 'config.json'), JSON.stringify({ ...config, intermediate_size: 48 }));
    await expect(loadModel(dir)).rejects.toMatchObject({
      code: 'ENGINE_CHECKPOINT_MISMATCH',
      message: expect.stringMatching(/mlp\.down_proj\.weight has shape \[32, 64\].*implies \[32, 48\]/),
    });

    await writeFile(join(dir, 'config.json'), JSON.stringify({ ...config, num_hidden_layers: 3 }));
    await expect(loadModel(dir)).rejects.toMatchObject({
      code: 'ENGINE_CHECKPOINT_MISMATCH',
      message: expect.stringMatching(/lacks .* model\.layers\.2\./),
    });

    await writeFile(join(dir, 'config.json'), JSON.stringify({ ...config, num_hidden_layers: 1 }));
    await expect(loadModel(dir)).rejects.toMatchObject({
      code: 'ENGINE_CHECKPOINT_MISMATCH',
      message: expect.stringMatching(/model\.layers\.1\..* does not have/),
    });

    await writeFile(join(dir, 'config.json'), JSON.stringify({ ...config, hidden_size: 'wide' }));
    await expect(loadModel(dir)).rejects.toMatchObject({
      code: 'ENGINE_INVALID_CONFIG',
      message: expect.stringMatching(/hidden_size/),
    });
    await expect(loadModel(join(root, 'nowhere'))).rejects.toMatchObject({
      code: 'ENGINE_CHECKPOINT_NOT_FOUND',
    });
  });

  it('optimizer state round-trips through optimizer.safetensors', async () => {
    const model = createModel(tinyConfig(), { seed: 4 });
    const opt = createAdamW(model);
    model.sftLoss(packSequences([[1, 2, 3]]), [1, 1, 1]);
    opt.step();
    await saveOptimizerState(opt, join(root, 'opt'));
    const other = createAdamW(createModel(tinyConfig(), { seed: 4 }));
    await loadOptimizerState(other, join(root, 'opt'));
    expect(other.stepsTaken).toBe(1);
    expect(Buffer.from(other.state().m.buffer).equals(Buffer.from(opt.state().m.buffer))).toBe(true);
  });
});
