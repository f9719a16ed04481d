import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packSequences } from '../src/batch.js';
import {
  hasOptimizerState,
  loadModel,
  loadOptimizerState,
  saveModel,
  saveOptimizerState,
} from '../src/checkpoint.js';
import { createGenerator } from '../src/generator.js';
import { createModel } from '../src/model.js';
import { createAdamW } from '../src/optimizer.js';
import { openSafetensors, writeSafetensors } from '../src/safetensors.js';
import { splitIntoShards } from '../src/shards.js';
import { tinyConfig } from './helpers.js';

const root = await mkdtemp(join(tmpdir(), 'agentrl-shards-'));
afterAll(() => rm(root, { recursive: true, force: true }));

describe('sharding as transformers save_pretrained does it', () => {
  it('splits like huggingface_hub: in order, oversized tensors alone and first', () => {
    // the docstring example of split_state_dict_into_shards_factory: limit 10, sizes [6, 6, 2, 6, 2, 2]
    expect(splitIntoShards([6, 6, 2, 6, 2, 2], (n) => n, 10)).toEqual([[6], [6, 2], [6, 2, 2]]);
    expect(splitIntoShards([3, 12, 3, 3, 5], (n) => n, 10)).toEqual([[12], [3, 3, 3], [5]]);
  });

  it('writes model-0000i-of-0000n files and model.safetensors.index.json byte for byte as save_pretrained', async () => {
    const model = createModel(tinyConfig({ tie_word_embeddings: false }), { seed: 1 });
    const dir = join(root, 'sharded');
    await saveModel(model, dir, { maxShardBytes: 10_000 });
    const files = (await readdir(dir)).sort();
    const shards = files.filter((f) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(f));
    expect(shards.length).toBeGreaterThan(1);
    expect(shards[0]).toBe(`model-00001-of-${String(shards.length).padStart(5, '0')}.safetensors`);
    expect(files).not.toContain('model.safetensors');
    const text = await readFile(join(dir, 'model.safetensors.index.json'), 'utf8');
    const index = JSON.parse(text) as {
      metadata: Record<string, number>;
      weight_map: Record<string, string>;
    };
    // what json.dumps(index, indent=2, sort_keys=True) + "\n" gives for the same object
    const sorted = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).sort());
    expect(text).toBe(
      `${JSON.stringify({ metadata: sorted(index.metadata), weight_map: sorted(index.weight_map) }, null, 2)}\n`,
    );
    const bytes = model.parameters().reduce((n, p) => n + p.data.length * 4, 0);
    expect(index.metadata).toEqual({ total_parameters: model.numParameters, total_size: bytes });
    expect(Object.keys(index.weight_map).sort()).toEqual(
      model
        .parameters()
        .map((p) => p.name)
        .sort(),
    );
    for (const f of shards) {
      const r = await openSafetensors(join(dir, f));
      expect(r.metadata).toEqual({ format: 'pt' });
      for (const name of r.tensors.keys()) expect(index.weight_map[name]).toBe(f);
      await r.close();
    }
    // saving again unsharded removes the stale shards and index; loading prefers model.safetensors
    await saveModel(model, dir);
    expect((await readdir(dir)).sort()).toEqual(['config.json', 'model.safetensors']);
  });

  it('loads a sharded checkpoint whose shards were written by another tool, in any tensor order', async () => {
    const model = createModel(tinyConfig(), { seed: 2 });
    const dir = join(root, 'foreign');
    await saveModel(model, dir, { maxShardBytes: 20_000 });
    const loaded = await loadModel(dir);
    const batch = packSequences([[1, 2, 3, 4]]);
    expect(
      Buffer.from(loaded.forwardLogits(batch).buffer).equals(Buffer.from(model.forwardLogits(batch).buffer)),
    ).toBe(true);
    await writeFile(join(dir, 'model.safetensors.index.json'), '{"weight_map": {"x": "../etc/passwd"}}');
    await expect(loadModel(dir)).rejects.toMatchObject({ code: 'ENGINE_CHECKPOINT_NOT_FOUND' });
  });
});

describe('precision on disk', () => {
  it('F16 round-trips exactly (subnormals, signs, infinities) and rounds to nearest even', async () => {
    const values = new Float32Array([
      0,
      -0,
      1,
      -2.5,
      65504,
      6.1e-5,
      5.96e-8,
      -1e-7,
      Number.POSITIVE_INFINITY,
      1 + 2 ** -11,
      1 + 3 * 2 ** -11,
      70000,
    ]);
    const path = join(root, 'f16.safetensors');
    await writeSafetensors(path, [{ name: 'x', dtype: 'F16', shape: [values.length], data: values }]);
    const r = await openSafetensors(path);
    const back = new Float32Array(values.length);
    await r.readInto(r.tensors.get('x')!, back);
    await r.close();
    // expected values from Python struct.pack("e") (IEEE binary16, round half to even); 1 + 2^-11 is a
    // tie that goes to even (1), 1 + 3*2^-11 to 1 + 2^-9; 70000 overflows to infinity
    expect(Array.from(back)).toEqual([
      0,
      -0,
      1,
      -2.5,
      65504,
      6.097555160522461e-5,
      2 ** -24,
      -(2 ** -23),
      Number.POSITIVE_INFINITY,
      1,
      1 + 2 ** -9,
      Number.POSITIVE_INFINITY,
    ]);
    const again = join(root, 'f16-again.safetensors');
    await writeSafetensors(again, [{ name: 'x', dtype: 'F16', shape: [back.length], data: back }]);
    expect((await readFile(again)).equals(await readFile(path))).toBe(true);
  });

  it('a float16 model saves and loads in float16', async () => {
    const model = createModel(tinyConfig({ dtype: 'float16' }), { seed: 3 });
    const dir = join(root, 'fp16');
    await saveModel(model, dir);
    const loaded = await loadModel(dir, { training: false });
    expect(loaded.dtype).toBe('float16');
    await saveModel(loaded, join(root, 'fp16-b'));
    expect(
      (await readFile(join(dir, 'model.safetensors'))).equals(
        await readFile(join(root, 'fp16-b', 'model.safetensors')),
      ),
    ).toBe(true);
  });
});

describe('eval and serving models hold weights only', () => {
  it('training: false allocates no gradients and no moments; training refuses with a message', async () => {
    const dir = join(root, 'eval');
    const trained = createModel(tinyConfig(), { seed: 4 });
    const opt = createAdamW(trained);
    expect(trained.memoryBytes()).toEqual({
      params: trained.memoryBytes().params,
      grads: trained.memoryBytes().params,
      optimizer: 2 * trained.memoryBytes().params,
    });
    await saveModel(trained, dir);
    const model = await loadModel(dir, { training: false });
    expect(model.training).toBe(false);
    expect(model.memoryBytes()).toMatchObject({ grads: 0, optimizer: 0 });
    expect(model.parameters()[0]!.grad.length).toBe(0);
    const batch = packSequences([[1, 2, 3]]);
    expect(model.forwardLogits(batch).length).toBe(3 * 50);
    expect(() => model.sftLoss(batch, [1, 1, 1])).toThrow(/training: false.*enableTraining/);
    expect(() => createAdamW(model)).toThrow(expect.objectContaining({ code: 'ENGINE_NOT_TRAINING' }));
    expect(() => model.native.backward(model.handle, new Float32Array(3 * 32), undefined)).toThrow(
      expect.objectContaining({ code: 'ENGINE_INVALID_ARGUMENT' }),
    );
    const gen = createGenerator(model, { seed: 1 });
    const [out] = await gen.generate([
      { cacheId: 'a', tokenIds: [1, 2, 3], params: { temperature: 0, maxNewTokens: 4 } },
    ]);
    expect(out!.tokenIds.length).toBe(4);
    model.enableTraining();
    expect(model.memoryBytes()).toMatchObject({ grads: model.memoryBytes().params, optimizer: 0 });
    model.sftLoss(batch, [1, 1, 1]);
    expect(model.gradNorm()).toBeGreaterThan(0);
    expect(opt.stepsTaken).toBe(0);
  });

  it('RSS: a 100 MB model created for eval costs about its weights, a training one about twice', async () => {
    const { spawnSync } = await import('node:child_process');
    // A child process, so the measurement is this model's memory alone; plain JS on the built loader.
    const script = `
      const { loadNative } = await import('@agentrl/native');
      const engine = loadNative().engine;
      const cfg = { vocab: 25000, hidden: 1024, intermediate: 64, layers: 1, heads: 8, kvHeads: 8, headDim: 128,
        eps: 1e-6, ropeTheta: 10000, qkNorm: true, qkvBias: false, oBias: false, tied: true,
        training: process.argv[1] === 'train' };
      const before = process.memoryUsage().rss;
      const m = engine.createModel(cfg);
      console.log(JSON.stringify({ rss: process.memoryUsage().rss - before, params: m.numFloats * 4 }));`;
    const run = (mode: string) => {
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, mode], {
        encoding: 'utf8',
        cwd: new URL('..', import.meta.url).pathname,
      });
      if (r.status !== 0) throw new Error(r.stderr);
      return JSON.parse(r.stdout.trim().split('\n').pop()!) as { rss: number; params: number };
    };
    const evalRun = run('eval');
    const trainRun = run('train');
    expect(evalRun.params).toBeGreaterThan(100e6);
    expect(evalRun.rss).toBeLessThan(1.4 * evalRun.params);
    expect(trainRun.rss).toBeGreaterThan(1.8 * trainRun.params);
  });
});

describe('optimizer state', () => {
  it('shards like the weights, restores bit-exactly, and still reads the old flat layout', async () => {
    const model = createModel(tinyConfig(), { seed: 5 });
    const opt = createAdamW(model);
    model.sftLoss(packSequences([[1, 2, 3, 4]]), [1, 1, 1, 1]);
    opt.step();
    const dir = join(root, 'opt');
    await saveOptimizerState(opt, dir, { maxShardBytes: 20_000 });
    const files = (await readdir(dir)).sort();
    expect(files).toContain('optimizer.safetensors.index.json');
    expect(files.filter((f) => /^optimizer-\d{5}-of-\d{5}\.safetensors$/.test(f)).length).toBeGreaterThan(1);
    expect(hasOptimizerState(dir)).toBe(true);
    const other = createAdamW(createModel(tinyConfig(), { seed: 5 }));
    await loadOptimizerState(other, dir);
    expect(other.stepsTaken).toBe(1);
    expect(Buffer.from(other.state().m.buffer).equals(Buffer.from(opt.state().m.buffer))).toBe(true);
    expect(Buffer.from(other.state().v.buffer).equals(Buffer.from(opt.state().v.buffer))).toBe(true);

    const legacy = join(root, 'opt-legacy');
    const s = opt.state();
    await import('node:fs/promises').then((fs) => fs.mkdir(legacy, { recursive: true }));
    await writeSafetensors(
      join(legacy, 'optimizer.safetensors'),
      [
        { name: 'adamw.m', dtype: 'F32', shape: [s.m.length], data: s.m },
        { name: 'adamw.v', dtype: 'F32', shape: [s.v.length], data: s.v },
      ],
      { step: '1' },
    );
    const third = createAdamW(createModel(tinyConfig(), { seed: 5 }));
    await loadOptimizerState(third, legacy);
    expect(Buffer.from(third.state().v.buffer).equals(Buffer.from(s.v.buffer))).toBe(true);
    const wrong = createAdamW(createModel(tinyConfig({ hidden_size: 64 }), { seed: 5 }));
    await expect(loadOptimizerState(wrong, dir)).rejects.toMatchObject({
      code: 'ENGINE_CHECKPOINT_MISMATCH',
    });
  });
});
