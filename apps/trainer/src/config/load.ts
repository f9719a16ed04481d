import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { TrainerError } from '../errors.js';
import { deepMerge, isPlainObject } from './merge.js';
import { DEFAULT_PRESET, PRESET_NAMES, PRESETS, type PresetName } from './presets.js';
import { type TrainConfig, TrainConfigSchema } from './schema.js';

export interface ConfigSources {
  /** Preset to start from (default `tiny`). */
  preset?: string | undefined;
  /** YAML or JSON config file, applied over the preset. */
  file?: string | undefined;
  /** Partial config from flags, applied last. */
  overrides?: Record<string, unknown> | undefined;
}

/** Preset ← file ← flags, validated once. Errors name every offending field path and the source that set it. */
export function resolveConfig(sources: ConfigSources = {}): TrainConfig {
  const presetName = sources.preset ?? DEFAULT_PRESET;
  if (!(PRESET_NAMES as string[]).includes(presetName)) {
    throw new TrainerError(
      'CONFIG_INVALID',
      `config: unknown preset "${presetName}"; use one of ${PRESET_NAMES.join(', ')}`,
    );
  }
  let raw: unknown = structuredClone(PRESETS[presetName as PresetName]);
  const file = sources.file ? readConfigFile(sources.file) : undefined;
  if (file) raw = deepMerge(raw, file);
  if (sources.overrides) raw = deepMerge(raw, sources.overrides);
  const blame: Blame = (path) => {
    const flag = setBy(sources.overrides, path);
    if (flag) return `--${flag}`;
    return setBy(file, path) ? `${sources.file}` : `preset ${presetName}`;
  };
  return parseConfig(
    raw,
    [
      `preset ${presetName}`,
      sources.file,
      sources.overrides && Object.keys(sources.overrides).length ? 'flags' : undefined,
    ]
      .filter(Boolean)
      .join(' ← '),
    blame,
  );
}

/** Which source set a config path: the flag, the file or the preset, for error messages. */
export type Blame = (path: readonly PropertyKey[]) => string;

/** The dotted prefix of `path` that `source` sets (`rl.stages` for `rl.stages.0.steps`), or undefined. */
function setBy(source: unknown, path: readonly PropertyKey[]): string | undefined {
  let node = source;
  for (let i = 0; i < path.length; i++) {
    if (!isPlainObject(node) || !(String(path[i]) in node)) return undefined;
    node = node[String(path[i])];
    if (!isPlainObject(node))
      return path
        .slice(0, i + 1)
        .map(String)
        .join('.');
  }
  return path.map(String).join('.');
}

/** Validates a raw config object; `origin` names where it came from, `blame` which source set a field. */
export function parseConfig(raw: unknown, origin = 'config', blame?: Blame): TrainConfig {
  const result = TrainConfigSchema.safeParse(raw);
  if (!result.success) throw new TrainerError('CONFIG_INVALID', formatIssues(result.error, origin, blame));
  const cfg = result.data;
  if (cfg.rl.oversample < cfg.rl.n) {
    const from = blame
      ? ` (rl.oversample from ${blame(['rl', 'oversample'])}, rl.n from ${blame(['rl', 'n'])})`
      : '';
    throw new TrainerError(
      'CONFIG_INVALID',
      `config (${origin}): rl.oversample (${cfg.rl.oversample}) must be >= rl.n (${cfg.rl.n})${from}; raise rl.oversample or lower rl.n`,
    );
  }
  if (cfg.task.kind === 'files' && cfg.task.trainFiles.length === 0) {
    throw new TrainerError(
      'CONFIG_INVALID',
      `config (${origin}): task.trainFiles is empty but task.kind is "files"${blame ? ` (task.kind from ${blame(['task', 'kind'])})` : ''}; list at least one jsonl/parquet file`,
    );
  }
  return cfg;
}

export function formatIssues(error: z.ZodError, origin: string, blame?: Blame): string {
  const lines = error.issues.map(
    (i) =>
      `  - ${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}${blame && i.path.length ? ` (set by ${blame(i.path)})` : ''}`,
  );
  return `config (${origin}) is invalid:\n${lines.join('\n')}\nRun \`agentrl train --help\` for every option and its type.`;
}

/** A --config file's options as written (YAML or JSON); errors name the file and what is wrong. */
export function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    throw new TrainerError('CONFIG_FILE', `config: cannot read ${file}; check the --config path`, { cause });
  }
  let value: unknown;
  try {
    value = extname(file) === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (cause) {
    throw new TrainerError(
      'CONFIG_FILE',
      `config: ${file} is not valid ${extname(file) === '.json' ? 'JSON' : 'YAML'}: ${(cause as Error).message}`,
      { cause },
    );
  }
  if (value == null) return {};
  if (!isPlainObject(value))
    throw new TrainerError('CONFIG_FILE', `config: ${file} must hold a mapping of options at its top level`);
  return value;
}
