import { z } from 'zod';
import { TrainConfigSchema } from './schema.js';

/** One settable leaf of the config, as listed by `--help` and accepted as `--<path> value`. */
export interface ConfigOption {
  path: string[];
  type: 'string' | 'number' | 'integer' | 'boolean' | 'json' | 'enum';
  nullable: boolean;
  description: string;
  defaultValue: unknown;
  choices?: string[];
}

interface JsonSchemaNode {
  type?: string | string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  properties?: Record<string, JsonSchemaNode>;
  anyOf?: JsonSchemaNode[];
  items?: JsonSchemaNode;
  prefixItems?: JsonSchemaNode[];
}

let cached: ConfigOption[] | undefined;

/** Every leaf option of the schema, in schema order (derived from the zod schema, never hand-listed). */
export function listConfigOptions(): ConfigOption[] {
  if (cached) return cached;
  const root = z.toJSONSchema(TrainConfigSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchemaNode;
  const out: ConfigOption[] = [];
  walk(root, [], out, '');
  cached = out;
  return out;
}

function walk(node: JsonSchemaNode, path: string[], out: ConfigOption[], parentDesc: string): void {
  const types = Array.isArray(node.type) ? node.type : node.type ? [node.type] : [];
  if (node.properties && types.includes('object')) {
    for (const [key, child] of Object.entries(node.properties))
      walk(child, [...path, key], out, node.description ?? parentDesc);
    return;
  }
  const nullable = types.includes('null');
  const base = types.find((t) => t !== 'null') ?? 'string';
  const option: ConfigOption = {
    path,
    type: node.enum
      ? 'enum'
      : base === 'object' || base === 'array'
        ? 'json'
        : (base as ConfigOption['type']),
    nullable,
    description: node.description ?? parentDesc,
    defaultValue: node.default,
  };
  if (node.enum) option.choices = node.enum.map(String);
  out.push(option);
}

/** Finds the option for a dotted flag name. */
export function findOption(dotted: string): ConfigOption | undefined {
  return listConfigOptions().find((o) => o.path.join('.') === dotted);
}
