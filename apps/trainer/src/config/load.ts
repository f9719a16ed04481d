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

/** Preset ← file ← flags, validated once. Errors name every offending field path. */
export function resolveConfig(sources: ConfigSources = {}): TrainConfig {
  const presetName = sources.preset ?? DEFAULT_PRESET;
  if (!(PRESET_NAMES as string[]).includes(presetName)) {
    throw new TrainerError(
      'CONFIG_INVALID',
      `config: unknown preset "${presetName}"; use one of ${PRESET_NAMES.join(', ')}`,
    );
  }
  let raw: unknown = structuredClone(PRESETS[presetName as PresetName]);
  if (sources.file) raw = deepMerge(raw, readConfigFile(sources.file));
  if (sources.overrides) raw = deepMerge(raw, sources.overrides);
  return parseConfig(raw, sources.file ?? `preset ${presetName}`);
}

/** Validates a raw config object; `origin` names where it came from in the error. */
export function parseConfig(raw: unknown, origin = 'config'): TrainConfig {
  const result = TrainConfigSchema.safeParse(raw);
  if (!result.success) throw new TrainerError('CONFIG_INVALID', formatIssues(result.error, origin));
  const cfg = result.data;
  if (cfg.rl.oversample < cfg.rl.n) {
    throw new TrainerError(
      'CONFIG_INVALID',
      `config (${origin}): rl.oversample (${cfg.rl.oversample}) must be >= rl.n (${cfg.rl.n}); raise rl.oversample or lower rl.n`,
    );
  }
  if (cfg.task.kind === 'files' && cfg.task.trainFiles.length === 0) {
    throw new TrainerError(
      'CONFIG_INVALID',
      `config (${origin}): task.trainFiles is empty but task.kind is "files"; list at least one jsonl/parquet file`,
    );
  }
  return cfg;
}

export function formatIssues(error: z.ZodError, origin: string): string {
  const lines = error.issues.map((i) => `  - ${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`);
  return `config (${origin}) is invalid:\n${lines.join('\n')}\nRun \`agentrl train --help\` for every option and its type.`;
}

function readConfigFile(file: string): Record<string, unknown> {
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
