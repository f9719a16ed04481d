import { existsSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EngineError } from './errors.js';
import {
  openSafetensors,
  type SafetensorsReader,
  type TensorHeader,
  type TensorSource,
  tensorBytes,
  writeSafetensors,
} from './safetensors.js';

/**
 * huggingface_hub's default `max_shard_size` of `split_torch_state_dict_into_shards` ("5GB", in
 * decimal bytes), which transformers 4.x `save_pretrained` passes on; transformers 5 raised its own
 * default to "50GB".
 */
export const DEFAULT_MAX_SHARD_BYTES = 5_000_000_000;

/**
 * Splits tensors into shards exactly as huggingface_hub's `split_state_dict_into_shards_factory`
 * does: in order, a new shard when the next tensor would tip the current one over the limit, and a
 * tensor larger than the limit alone in its own shard (appended right away, so it comes before the
 * shard still being filled).
 */
export function splitIntoShards<T>(items: readonly T[], bytesOf: (t: T) => number, maxBytes: number): T[][] {
  const shards: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const item of items) {
    const n = bytesOf(item);
    if (n > maxBytes) {
      shards.push([item]);
      continue;
    }
    if (size + n > maxBytes) {
      shards.push(current);
      current = [];
      size = 0;
    }
    current.push(item);
    size += n;
  }
  if (current.length > 0) shards.push(current);
  return shards;
}

export interface ShardedWriteOptions {
  /** `model` writes model.safetensors or model-0000i-of-0000n.safetensors + model.safetensors.index.json */
  prefix: string;
  maxShardBytes: number;
  /** written into every file's `__metadata__` */
  metadata: Record<string, string>;
  /** extra entries of the index's `metadata` (besides total_size) */
  indexMetadata?: Record<string, number | string>;
}

const pad = (i: number) => String(i).padStart(5, '0');
const shardPattern = (prefix: string) => new RegExp(`^${prefix}-\\d{5}-of-\\d{5}\\.safetensors$`);

/**
 * Writes tensors as transformers' `save_pretrained` lays them out: one `<prefix>.safetensors` when
 * they fit in one shard, else `<prefix>-00001-of-0000N.safetensors` files plus
 * `<prefix>.safetensors.index.json` (`{ metadata: { total_size, ... }, weight_map }`, keys sorted,
 * 2-space indent, trailing newline, as `json.dumps(index, indent=2, sort_keys=True) + "\n"`).
 * Stale shards and index of an earlier save in `dir` are removed. Each file streams to disk.
 */
export async function writeSharded(
  dir: string,
  tensors: readonly TensorSource[],
  options: ShardedWriteOptions,
): Promise<string[]> {
  const { prefix } = options;
  const bytesOf = (t: TensorSource) => tensorBytes(t.dtype, t.data.length);
  const shards = splitIntoShards(tensors, bytesOf, options.maxShardBytes);
  const names =
    shards.length <= 1
      ? [`${prefix}.safetensors`]
      : shards.map((_, i) => `${prefix}-${pad(i + 1)}-of-${pad(shards.length)}.safetensors`);
  const pattern = shardPattern(prefix);
  for (const f of await readdir(dir)) {
    if ((pattern.test(f) || f === `${prefix}.safetensors`) && !names.includes(f)) await rm(join(dir, f));
  }
  const index = join(dir, `${prefix}.safetensors.index.json`);
  if (shards.length <= 1 && existsSync(index)) await rm(index);
  const weightMap: Record<string, string> = {};
  let total = 0;
  for (let i = 0; i < shards.length; i++) {
    const shard = shards[i] as TensorSource[];
    const file = names[i] as string;
    total += await writeSafetensors(join(dir, file), shard, options.metadata);
    for (const t of shard) weightMap[t.name] = file;
  }
  if (shards.length === 0) await writeSafetensors(join(dir, names[0] as string), [], options.metadata);
  if (shards.length > 1) {
    const body = {
      metadata: sortKeys({ ...(options.indexMetadata ?? {}), total_size: total }),
      weight_map: sortKeys(weightMap),
    };
    await writeFile(index, `${JSON.stringify(body, null, 2)}\n`);
  }
  return names;
}

function sortKeys<V>(o: Record<string, V>): Record<string, V> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The files of a checkpoint written by {@link writeSharded} (or by transformers), or undefined. */
export async function shardFiles(dir: string, prefix: string): Promise<string[] | undefined> {
  // transformers' from_pretrained prefers the single file when both exist; so do we.
  if (existsSync(join(dir, `${prefix}.safetensors`))) return [`${prefix}.safetensors`];
  const indexPath = join(dir, `${prefix}.safetensors.index.json`);
  if (!existsSync(indexPath)) return undefined;
  let index: { weight_map?: Record<string, string> };
  try {
    index = JSON.parse(await readFile(indexPath, 'utf8')) as typeof index;
  } catch (err) {
    throw new EngineError('CHECKPOINT_INVALID', `${indexPath} is not valid JSON`, { cause: err });
  }
  if (!index.weight_map || typeof index.weight_map !== 'object') {
    throw new EngineError('CHECKPOINT_INVALID', `${indexPath} has no weight_map`);
  }
  const files = [...new Set(Object.values(index.weight_map))].sort();
  for (const f of files) {
    if (typeof f !== 'string' || f.includes('/') || f.includes('\\') || !existsSync(join(dir, f))) {
      throw new EngineError(
        'CHECKPOINT_NOT_FOUND',
        `${prefix}.safetensors.index.json names ${String(f)}, which is missing from ${dir}`,
      );
    }
  }
  return files;
}

/**
 * Visits every tensor of the given files, one open file at a time; `visit` reads what it wants
 * through the reader. A tensor name found in two files is refused.
 */
export async function forEachTensor(
  dir: string,
  files: readonly string[],
  visit: (t: TensorHeader, reader: SafetensorsReader, file: string) => Promise<void>,
): Promise<void> {
  const seen = new Map<string, string>();
  for (const file of files) {
    const reader = await openSafetensors(join(dir, file));
    try {
      for (const t of reader.tensors.values()) {
        const before = seen.get(t.name);
        if (before !== undefined) {
          throw new EngineError('CHECKPOINT_INVALID', `${t.name} is in both ${before} and ${file}`);
        }
        seen.set(t.name, file);
        await visit(t, reader, file);
      }
    } finally {
      await reader.close();
    }
  }
}
