import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseModelConfig } from './config.js';
import { EngineError } from './errors.js';
import { createEmptyModel, type Model } from './model.js';
import type { AdamW } from './optimizer.js';
import {
  decodeToF32,
  f32ToBf16,
  parseSafetensors,
  serializeSafetensors,
  type TensorEntry,
} from './safetensors.js';

export interface SaveModelOptions {
  /** dtype on disk; default float32 */
  dtype?: 'float32' | 'bfloat16';
  /** Split into model-0000i-of-0000n.safetensors + index when the weights exceed this many bytes. */
  maxShardBytes?: number;
}

const SINGLE = 'model.safetensors';
const INDEX = 'model.safetensors.index.json';
/** Tensors HF checkpoints may carry that the engine recomputes instead of loading. */
const IGNORED = /\.rotary_emb\.inv_freq$/;

/** Writes config.json and model.safetensors (or shards + index) with Hugging Face tensor names. */
export async function saveModel(model: Model, dir: string, options: SaveModelOptions = {}): Promise<void> {
  const dtype = options.dtype ?? 'float32';
  await mkdir(dir, { recursive: true });
  const entries: Array<[string, TensorEntry]> = model.parameters().map((p) => [
    p.name,
    dtype === 'bfloat16'
      ? { dtype: 'BF16', shape: p.shape, data: f32ToBf16(p.data) }
      : {
          dtype: 'F32',
          shape: p.shape,
          data: new Uint8Array(p.data.buffer, p.data.byteOffset, p.data.byteLength),
        },
  ]);
  const config = { ...model.config, torch_dtype: dtype };
  await writeFile(join(dir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  const total = entries.reduce((n, [, e]) => n + e.data.length, 0);
  const max = options.maxShardBytes ?? Number.POSITIVE_INFINITY;
  if (total <= max) {
    await writeFile(join(dir, SINGLE), serializeSafetensors(new Map(entries), { format: 'pt' }));
    return;
  }
  const shards: Array<Map<string, TensorEntry>> = [];
  let current = new Map<string, TensorEntry>();
  let size = 0;
  for (const [name, e] of entries) {
    if (size > 0 && size + e.data.length > max) {
      shards.push(current);
      current = new Map();
      size = 0;
    }
    current.set(name, e);
    size += e.data.length;
  }
  shards.push(current);
  const weightMap: Record<string, string> = {};
  const pad = (i: number) => String(i).padStart(5, '0');
  for (let i = 0; i < shards.length; i++) {
    const file = `model-${pad(i + 1)}-of-${pad(shards.length)}.safetensors`;
    const shard = shards[i] as Map<string, TensorEntry>;
    for (const name of shard.keys()) weightMap[name] = file;
    await writeFile(join(dir, file), serializeSafetensors(shard, { format: 'pt' }));
  }
  const sortedMap = Object.fromEntries(
    Object.entries(weightMap).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
  await writeFile(
    join(dir, INDEX),
    `${JSON.stringify({ metadata: { total_size: total }, weight_map: sortedMap }, null, 2)}\n`,
  );
}

/**
 * Loads a Hugging Face checkpoint directory (config.json + model.safetensors or a sharded index).
 * Refuses, with the reason, a missing file, an unknown architecture, a truncated file, a missing,
 * unexpected or wrong-shaped tensor.
 */
export async function loadModel(dir: string): Promise<Model> {
  const configPath = join(dir, 'config.json');
  if (!existsSync(configPath)) {
    throw new EngineError(
      'CHECKPOINT_NOT_FOUND',
      `no config.json in ${dir}; point at a Hugging Face model directory`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(configPath, 'utf8'));
  } catch (err) {
    throw new EngineError('CHECKPOINT_INVALID', `${configPath} is not valid JSON`, { cause: err });
  }
  const model = createEmptyModel(parseModelConfig(raw));
  const files = await checkpointFiles(dir);
  const expected = new Map(model.parameters().map((p) => [p.name, p]));
  const seen = new Set<string>();
  for (const file of files) {
    const parsed = parseSafetensors(new Uint8Array(await readFile(join(dir, file))), join(dir, file));
    for (const [name, entry] of parsed.tensors) {
      if (IGNORED.test(name)) continue;
      const p = expected.get(name);
      if (!p) {
        if (name === 'lm_head.weight' && model.shape.tied) continue;
        throw new EngineError(
          'CHECKPOINT_MISMATCH',
          `${file} has tensor ${name}, which a ${model.config.architectures[0]} with this config.json does not have; the weights and config.json disagree`,
        );
      }
      if (entry.shape.length !== p.shape.length || entry.shape.some((s, i) => s !== p.shape[i])) {
        throw new EngineError(
          'CHECKPOINT_MISMATCH',
          `${name} has shape [${entry.shape.join(', ')}] in ${file} but config.json implies [${p.shape.join(', ')}]`,
        );
      }
      decodeToF32(entry, p.data);
      seen.add(name);
    }
  }
  const missing = [...expected.keys()].filter((n) => !seen.has(n));
  if (missing.length > 0) {
    throw new EngineError(
      'CHECKPOINT_MISMATCH',
      `${dir} lacks ${missing.length} tensor(s) the config needs, e.g. ${missing.slice(0, 3).join(', ')}`,
    );
  }
  model.markWeightsChanged();
  return model;
}

async function checkpointFiles(dir: string): Promise<string[]> {
  if (existsSync(join(dir, INDEX))) {
    let index: { weight_map?: Record<string, string> };
    try {
      index = JSON.parse(await readFile(join(dir, INDEX), 'utf8')) as typeof index;
    } catch (err) {
      throw new EngineError('CHECKPOINT_INVALID', `${join(dir, INDEX)} is not valid JSON`, { cause: err });
    }
    const files = [...new Set(Object.values(index.weight_map ?? {}))].sort();
    for (const f of files) {
      if (!existsSync(join(dir, f)))
        throw new EngineError('CHECKPOINT_NOT_FOUND', `${INDEX} names ${f}, which is missing from ${dir}`);
    }
    return files;
  }
  if (existsSync(join(dir, SINGLE))) return [SINGLE];
  throw new EngineError('CHECKPOINT_NOT_FOUND', `no ${SINGLE} or ${INDEX} in ${dir}`);
}

/** Writes the optimizer state (AdamW moments + step) as optimizer.safetensors in dir. */
export async function saveOptimizerState(optimizer: AdamW, dir: string): Promise<void> {
  const s = optimizer.state();
  await mkdir(dir, { recursive: true });
  const tensors = new Map<string, TensorEntry>([
    [
      'adamw.m',
      { dtype: 'F32', shape: [s.m.length], data: new Uint8Array(s.m.buffer, s.m.byteOffset, s.m.byteLength) },
    ],
    [
      'adamw.v',
      { dtype: 'F32', shape: [s.v.length], data: new Uint8Array(s.v.buffer, s.v.byteOffset, s.v.byteLength) },
    ],
  ]);
  await writeFile(
    join(dir, 'optimizer.safetensors'),
    serializeSafetensors(tensors, { step: String(s.step) }),
  );
}

/** Restores what saveOptimizerState wrote into an optimizer over a model of the same config. */
export async function loadOptimizerState(optimizer: AdamW, dir: string): Promise<void> {
  const path = join(dir, 'optimizer.safetensors');
  if (!existsSync(path)) throw new EngineError('CHECKPOINT_NOT_FOUND', `no optimizer.safetensors in ${dir}`);
  const parsed = parseSafetensors(new Uint8Array(await readFile(path)), path);
  const m = parsed.tensors.get('adamw.m');
  const v = parsed.tensors.get('adamw.v');
  if (!m || !v) throw new EngineError('CHECKPOINT_INVALID', `${path} lacks adamw.m / adamw.v`);
  const mf = new Float32Array(m.shape[0] ?? 0);
  const vf = new Float32Array(v.shape[0] ?? 0);
  decodeToF32(m, mf);
  decodeToF32(v, vf);
  optimizer.loadState({ step: Number(parsed.metadata.step ?? 0), m: mf, v: vf });
}
