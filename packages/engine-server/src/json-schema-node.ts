import { pythonJsonDumps } from './hermes.js';

export type JsonType = 'object' | 'array' | 'string' | 'number' | 'integer' | 'boolean' | 'null';
const TYPES: readonly JsonType[] = ['object', 'array', 'string', 'number', 'integer', 'boolean', 'null'];

/**
 * One alternative of a JSON Schema, reduced to what the prefix checker (json-prefix.ts) enforces
 * while the text is written. A schema compiles to a list of these (anyOf / oneOf branches, one
 * each); a value is accepted when it fits one of them.
 */
export interface SchemaNode {
  /** the JSON types allowed; `integer` without `number` holds numbers to integers */
  types: ReadonlySet<JsonType>;
  /** enum / const: the value's text must be one of these (JSON.stringify's and json.dumps' spelling) */
  literals?: readonly string[];
  properties: ReadonlyMap<string, readonly SchemaNode[]>;
  required: readonly string[];
  /** the schema of keys not in `properties`; null when additionalProperties is false */
  additional: readonly SchemaNode[] | null;
  items: readonly SchemaNode[];
}

/** Plain JSON: any value, nothing enforced (absent schema, `true`, and the fallback of unsupported keywords). */
export const ANY: readonly SchemaNode[] = (() => {
  const node: SchemaNode = {
    types: new Set(TYPES),
    properties: new Map(),
    required: [],
    additional: [],
    items: [],
  };
  const any = [node];
  Object.assign(node, { additional: any, items: any });
  return any;
})();

/** Keywords whose meaning the checker cannot hold a prefix to: the subschema is plain JSON. */
const FALLBACK = ['not', 'if', 'then', 'else', '$dynamicRef', 'dependentSchemas'];
/** How many `$ref`s deep a schema is expanded (a recursive schema is plain JSON past it). */
const MAX_REF_DEPTH = 8;

type Schema = Record<string, unknown>;
const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Compiles a tool's `parameters` JSON Schema into alternatives the prefix checker follows.
 * Enforced: type (one or a list), properties, required, additionalProperties (false / a schema /
 * absent = any), enum, const, items (one schema), anyOf / oneOf (sibling keywords merged into each
 * branch; oneOf held as anyOf), allOf of one schema, local `$ref` (`#/$defs/…`, `#/definitions/…`).
 * Subschemas with not / if / then / else, allOf of several, or a remote `$ref` are plain JSON;
 * other keywords (pattern, minLength, minimum, format, …) are not enforced.
 */
export function compileSchema(schema: unknown, root: unknown = schema, depth = 0): SchemaNode[] {
  if (schema === undefined || schema === null || schema === true) return [...ANY];
  if (schema === false) return [];
  if (!isObject(schema)) return [...ANY];
  if (FALLBACK.some((k) => k in schema)) return [...ANY];
  const { $ref, allOf, anyOf, oneOf, ...rest } = schema;
  if (typeof $ref === 'string') {
    const target = resolveRef(root, $ref);
    if (target === undefined || depth >= MAX_REF_DEPTH) return [...ANY];
    return compileSchema(isObject(target) ? merge(rest, target) : target, root, depth + 1);
  }
  if (Array.isArray(allOf)) {
    if (allOf.length !== 1 || !isObject(allOf[0])) return [...ANY];
    return compileSchema(merge(rest, allOf[0]), root, depth);
  }
  const branches = Array.isArray(anyOf) ? anyOf : Array.isArray(oneOf) ? oneOf : null;
  if (branches) {
    const base = Array.isArray(anyOf) && Array.isArray(oneOf) ? { ...rest, oneOf } : rest;
    return branches.flatMap((b) =>
      isObject(b) ? compileSchema(merge(base, b), root, depth) : compileSchema(b),
    );
  }
  const node = compileNode(rest, root, depth);
  return node ? [node] : [];
}

function compileNode(schema: Schema, root: unknown, depth: number): SchemaNode | null {
  const types = typesOf(schema.type);
  if (types.size === 0) return null;
  const sub = (s: unknown) => compileSchema(s, root, depth);
  const properties = new Map(
    Object.entries(isObject(schema.properties) ? schema.properties : {}).map(
      ([k, s]) => [k, sub(s)] as const,
    ),
  );
  const required = Array.isArray(schema.required)
    ? schema.required.filter((r): r is string => typeof r === 'string')
    : [];
  const extra = schema.additionalProperties;
  const node: SchemaNode = {
    types,
    properties,
    required,
    additional: extra === false ? null : sub(extra),
    items: Array.isArray(schema.items) ? [...ANY] : sub(schema.items),
  };
  if (!('enum' in schema) && !('const' in schema)) return node;
  let values = Array.isArray(schema.enum) ? schema.enum : [];
  if ('const' in schema)
    values =
      'enum' in schema
        ? values.filter((v) => JSON.stringify(v) === JSON.stringify(schema.const))
        : [schema.const];
  values = values.filter((v) => hasType(v, types));
  if (values.length === 0) return null;
  return { ...node, literals: [...new Set(values.flatMap((v) => [JSON.stringify(v), pythonJsonDumps(v)]))] };
}

function typesOf(type: unknown): Set<JsonType> {
  if (type === undefined) return new Set(TYPES);
  const list = (Array.isArray(type) ? type : [type]).filter((t): t is JsonType => TYPES.includes(t));
  return new Set(list);
}

function hasType(v: unknown, types: ReadonlySet<JsonType>): boolean {
  if (v === null) return types.has('null');
  if (Array.isArray(v)) return types.has('array');
  if (typeof v === 'number') return types.has('number') || (types.has('integer') && Number.isInteger(v));
  return types.has(typeof v as JsonType);
}

/** `base` with `branch` over it: required lists joined, properties merged, types intersected. */
function merge(base: Schema, branch: Schema): Schema {
  const out: Schema = { ...base, ...branch };
  if (Array.isArray(base.required) || Array.isArray(branch.required))
    out.required = [
      ...(Array.isArray(base.required) ? base.required : []),
      ...(Array.isArray(branch.required) ? branch.required : []),
    ];
  if (isObject(base.properties) && isObject(branch.properties))
    out.properties = { ...base.properties, ...branch.properties };
  if (base.type !== undefined && branch.type !== undefined) {
    const a = typesOf(base.type);
    const b = typesOf(branch.type);
    out.type = [...a].filter((t) => b.has(t) || (t === 'integer' && b.has('number')));
    if (a.has('number') && b.has('integer') && !(out.type as string[]).includes('integer'))
      (out.type as string[]).push('integer');
  }
  return out;
}

/** A local JSON pointer (`#/$defs/Name`) into the root schema; undefined for anything else. */
function resolveRef(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let at: unknown = root;
  for (const raw of ref.slice(1).split('/').slice(1)) {
    const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    if (!isObject(at) || !(key in at)) return undefined;
    at = at[key];
  }
  return at;
}
