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
  // A nullable number or integer comes as anyOf [{type: number, ...}, {type: null}] (a nullable
  // string as type: [string, null]): read the type, the choices and null from either form.
  const branches = node.anyOf ?? [node];
  const branchTypes = branches.flatMap((b) => (Array.isArray(b.type) ? b.type : b.type ? [b.type] : []));
  const nullable = branchTypes.includes('null');
  const base = branchTypes.find((t) => t !== 'null') ?? 'string';
  const choices = branches.find((b) => b.enum)?.enum;
  const option: ConfigOption = {
    path,
    type: choices ? 'enum' : base === 'object' || base === 'array' ? 'json' : (base as ConfigOption['type']),
    nullable,
    description: node.description ?? parentDesc,
    defaultValue: node.default,
  };
  if (choices) option.choices = choices.map(String);
  out.push(option);
}

/** Finds the option for a dotted flag name. */
export function findOption(dotted: string): ConfigOption | undefined {
  return listConfigOptions().find((o) => o.path.join('.') === dotted);
}
