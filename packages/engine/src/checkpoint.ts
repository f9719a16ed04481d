import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type ModelDtype, parseModelConfig, toHfConfigJson } from './config.js';
import { bindingForDevice, type DeviceOptions } from './device.js';
import { EngineError } from './errors.js';
import { createEmptyModel, type Model, type ModelMemoryOptions } from './model.js';
import type { AdamW } from './optimizer.js';
import type { SafetensorsDtype, TensorSource } from './safetensors.js';
import { DEFAULT_MAX_SHARD_BYTES, forEachTensor, shardFiles, writeSharded } from './shards.js';

export interface SaveModelOptions {
  /** dtype on disk; default the model's own (`model.dtype`: what config.json said, float32 for a new model) */
  dtype?: ModelDtype;
  /**
   * Split into model-0000i-of-0000n.safetensors + model.safetensors.index.json when the weights
   * exceed this many bytes; default 5 GB (huggingface_hub's `max_shard_size`).
   */
  maxShardBytes?: number;
}

export interface SaveOptimizerOptions {
  /** Shard size of optimizer-0000i-of-0000n.safetensors; default 5 GB, as for the weights. */
  maxShardBytes?: number;
}

const ON_DISK: Record<ModelDtype, SafetensorsDtype> = { float32: 'F32', bfloat16: 'BF16', float16: 'F16' };
/** Tensors HF checkpoints may carry that the engine recomputes instead of loading. */
const IGNORED = /\.rotary_emb\.inv_freq$/;

/**
 * Writes config.json and model.safetensors (or shards + index, as transformers' save_pretrained
 * does) with Hugging Face tensor names, streaming each tensor to disk: checkpoints of any size.
 */
export async function saveModel(model: Model, dir: string, options: SaveModelOptions = {}): Promise<void> {
  const dtype = options.dtype ?? model.dtype;
  if (!(dtype in ON_DISK)) {
    throw new EngineError(
      'INVALID_REQUEST',
      `saveModel dtype "${String(dtype)}"; use float32, bfloat16 or float16`,
    );
  }
  await mkdir(dir, { recursive: true });
  const tensors: TensorSource[] = model
    .parameters()
    .map((p) => ({ name: p.name, dtype: ON_DISK[dtype], shape: p.shape, data: p.data }));
  await writeFile(
    join(dir, 'config.json'),
    `${JSON.stringify(toHfConfigJson(model.config, dtype), null, 2)}\n`,
  );
  await writeSharded(dir, tensors, {
    prefix: 'model',
    maxShardBytes: shardLimit(options.maxShardBytes),
    metadata: { format: 'pt' },
    indexMetadata: { total_parameters: model.numParameters },
  });
}

function shardLimit(n: number | undefined): number {
  if (n === undefined) return DEFAULT_MAX_SHARD_BYTES;
  if (!(n > 0)) throw new EngineError('INVALID_REQUEST', `maxShardBytes must be positive, got ${n}`);
  return n;
}

/** `device` / `precision`: where the loaded model lives (default cpu), as for createModel. */
export interface LoadModelOptions extends ModelMemoryOptions, DeviceOptions {}

/**
 * Loads a Hugging Face checkpoint directory (config.json + model.safetensors or a sharded index),
 * reading each tensor straight into the model's weights (F32, BF16 or F16 on disk; fp32 in memory).
 * `{ training: false }` opens it for eval or serving: no gradients, no optimizer moments.
 * `{ device: 'cuda' | 'rocm' }` loads it onto that GPU (the tensors are read into the host mirror and
 * uploaded by the first device call); a device that cannot run here fails first, before any file is
 * read, with createModel's error (the reason from listBackends() and `device: 'cpu'`).
 * Refuses, with the reason, a missing file, an unknown architecture, a truncated file, a missing,
 * unexpected or wrong-shaped tensor.
 */
export async function loadModel(dir: string, options: LoadModelOptions = {}): Promise<Model> {
  // A device that cannot run here, or bf16 on the cpu, fails before any file is read.
  if ((options.device ?? 'cpu') !== 'cpu' || options.precision !== undefined) bindingForDevice(options);
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
  const config = parseModelConfig(raw);
  const files = await shardFiles(dir, 'model');
  if (!files)
    throw new EngineError(
      'CHECKPOINT_NOT_FOUND',
      `no model.safetensors or model.safetensors.index.json in ${dir}`,
    );
  const model = createEmptyModel(config, options);
  const expected = new Map(model.parameters().map((p) => [p.name, p]));
  const seen = new Set<string>();
  await forEachTensor(dir, files, async (t, reader, file) => {
    if (IGNORED.test(t.name)) return;
    const p = expected.get(t.name);
    if (!p) {
      if (t.name === 'lm_head.weight' && model.shape.tied) return;
      throw new EngineError(
        'CHECKPOINT_MISMATCH',
        `${file} has tensor ${t.name}, which a ${model.config.architectures[0]} with this config.json does not have; the weights and config.json disagree`,
      );
    }
    if (t.shape.length !== p.shape.length || t.shape.some((s, i) => s !== p.shape[i])) {
      throw new EngineError(
        'CHECKPOINT_MISMATCH',
        `${t.name} has shape [${t.shape.join(', ')}] in ${file} but config.json implies [${p.shape.join(', ')}]`,
      );
    }
    await reader.readInto(t, p.data);
    seen.add(t.name);
  });
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

const EXP_AVG = '.exp_avg';
const EXP_AVG_SQ = '.exp_avg_sq';

/**
 * Writes the AdamW state beside the weights: per parameter `<name>.exp_avg` and `<name>.exp_avg_sq`
 * (fp32, torch's AdamW names) in optimizer.safetensors, or optimizer-0000i-of-0000n.safetensors +
 * optimizer.safetensors.index.json past `maxShardBytes`; the step count in each file's metadata.
 */
export async function saveOptimizerState(
  optimizer: AdamW,
  dir: string,
  options: SaveOptimizerOptions = {},
): Promise<void> {
  const model = optimizer.model;
  const { m, v } = model.adamMoments();
  const layout = model.tensorLayout();
  const tensors: TensorSource[] = [];
  model.parameters().forEach((p, i) => {
    const { offset, numel } = layout[i] as { offset: number; numel: number };
    tensors.push({
      name: p.name + EXP_AVG,
      dtype: 'F32',
      shape: p.shape,
      data: m.subarray(offset, offset + numel),
    });
    tensors.push({
      name: p.name + EXP_AVG_SQ,
      dtype: 'F32',
      shape: p.shape,
      data: v.subarray(offset, offset + numel),
    });
  });
  await mkdir(dir, { recursive: true });
  const step = String(optimizer.stepsTaken);
  await writeSharded(dir, tensors, {
    prefix: 'optimizer',
    maxShardBytes: shardLimit(options.maxShardBytes),
    metadata: { format: 'pt', step },
    indexMetadata: { step: optimizer.stepsTaken },
  });
}

/** Whether `dir` holds optimizer state written by saveOptimizerState (single file or sharded). */
export function hasOptimizerState(dir: string): boolean {
  return (
    existsSync(join(dir, 'optimizer.safetensors')) ||
    existsSync(join(dir, 'optimizer.safetensors.index.json'))
  );
}

/**
 * Restores what saveOptimizerState wrote (also the older flat `adamw.m` / `adamw.v` layout) into an
 * optimizer over a model of the same config, reading straight into the moments.
 */
export async function loadOptimizerState(optimizer: AdamW, dir: string): Promise<void> {
  const files = await shardFiles(dir, 'optimizer');
  if (!files) throw new EngineError('CHECKPOINT_NOT_FOUND', `no optimizer.safetensors in ${dir}`);
  const model = optimizer.model;
  const { m, v } = model.adamMoments();
  const layout = model.tensorLayout();
  const slots = new Map<string, Float32Array>();
  model.parameters().forEach((p, i) => {
    const { offset, numel } = layout[i] as { offset: number; numel: number };
    slots.set(p.name + EXP_AVG, m.subarray(offset, offset + numel));
    slots.set(p.name + EXP_AVG_SQ, v.subarray(offset, offset + numel));
  });
  slots.set('adamw.m', m);
  slots.set('adamw.v', v);
  let step: string | undefined;
  const seen = new Set<string>();
  await forEachTensor(dir, files, async (t, reader, file) => {
    const dst = slots.get(t.name);
    const numel = t.shape.reduce((a, b) => a * b, 1);
    if (!dst || numel !== dst.length) {
      throw new EngineError(
        'CHECKPOINT_MISMATCH',
        `${join(dir, file)} has ${t.name} [${t.shape.join(', ')}], which this model's optimizer does not have: it belongs to another model config`,
      );
    }
    await reader.readInto(t, dst);
    seen.add(t.name);
    step ??= reader.metadata.step;
  });
  const legacy = seen.has('adamw.m') && seen.has('adamw.v');
  const missing = [...slots.keys()].filter((n) => !n.startsWith('adamw.') && !seen.has(n));
  if (!legacy && missing.length > 0) {
    throw new EngineError(
      'CHECKPOINT_INVALID',
      `${dir}: the optimizer state lacks ${missing.length} moment tensor(s), e.g. ${missing.slice(0, 2).join(', ')}`,
    );
  }
  optimizer.restoreStep(Number(step ?? 0));
}
