import { Ajv } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pythonJsonDumps } from './hermes.js';
import { argumentsPrefix, type JsonSchemaPrefix } from './json-prefix.js';

const ajv = new Ajv({ strict: false });

/** How many characters of `text` the checker accepts (text.length: all), and whether it ended done. */
function read(make: () => JsonSchemaPrefix, text: string): { accepted: number; done: boolean } {
  const p = make();
  for (let i = 0; i < text.length; i++) if (!p.feed(text[i]!)) return { accepted: i, done: p.done };
  return { accepted: text.length, done: p.done };
}

const RUN = {
  type: 'object',
  properties: {
    n: { type: 'integer' },
    mode: { type: 'string', enum: ['fast', 'exact'] },
    note: { type: ['string', 'null'] },
    tags: { type: 'array', items: { type: 'string' } },
    opts: {
      type: 'object',
      properties: { depth: { type: 'number' }, strict: { type: 'boolean' } },
      required: ['depth'],
      additionalProperties: false,
    },
  },
  required: ['n', 'mode'],
  additionalProperties: false,
};
const SHAPES = {
  type: 'object',
  properties: {
    shape: {
      anyOf: [
        {
          type: 'object',
          properties: { kind: { const: 'circle' }, r: { type: 'number' } },
          required: ['kind', 'r'],
          additionalProperties: false,
        },
        {
          type: 'object',
          properties: { kind: { const: 'rect' }, w: { type: 'integer' }, h: { type: 'integer' } },
          required: ['kind', 'w', 'h'],
          additionalProperties: false,
        },
      ],
    },
    level: { enum: [1, 2, 3, 'max', null] },
    extra: { $ref: '#/$defs/extra' },
  },
  required: ['shape'],
  additionalProperties: { type: 'integer' },
  $defs: { extra: { type: 'array', items: { type: 'object', properties: { k: { type: 'string' } } } } },
};
const PYTHON = { type: 'object', properties: { code: { type: 'string' } }, required: ['code'] };

describe('JsonSchemaPrefix: the forced arguments held to the tool schema', () => {
  const run = argumentsPrefix('run', RUN);

  it('accepts a valid call, prefix by prefix, and says when the object closed', () => {
    const text = '{"n": 12, "mode": "exact", "tags": ["a", "b"], "opts": {"depth": -1.5e3, "strict": true}}';
    for (let i = 1; i < text.length; i++)
      expect(read(run, text.slice(0, i))).toEqual({ accepted: i, done: false });
    expect(read(run, text)).toEqual({ accepted: text.length, done: true });
  });

  it('refuses at the first character no valid call can continue with', () => {
    const at = (text: string) => read(run, text).accepted;
    expect(at('{"n": 1.5')).toBe(7); // n is an integer: no fraction
    expect(at('{"n": 01')).toBe(7); // JSON has no leading zeros
    expect(at('{"mode": "fab')).toBe(12); // "fa" starts "fast"; "fab" starts no enum value
    expect(at('{"x')).toBe(2); // additionalProperties false: x starts no property name
    expect(at('{"n": 1}')).toBe(7); // mode is required: the object may not close yet
    expect(at('{"n": 1, "n"')).toBe(11); // a key is not written twice
    expect(at('{"note": t')).toBe(9); // a string or null, not a boolean
    expect(at('{"opts": {"strict": true}')).toBe(24); // depth is required inside opts
    expect(at('{"tags": [1')).toBe(10); // tags are strings
    expect(at('[')).toBe(0); // the arguments are an object
    expect(at('{"n": 1, "mode": "fast"} ')).toBe(24); // nothing after the object
    expect(at('{"n": 1-')).toBe(7); // RFC 8259 numbers: 1- is not one
    expect(at(`{"n": -${'9'.repeat(17)}`)).toBe(23); // an integer has at most 16 digits (2^53 has 16)
  });

  it('follows anyOf branches side by side, const and enum of mixed types, $ref and typed additionalProperties', () => {
    const shapes = argumentsPrefix('shapes', SHAPES);
    const ok = '{"shape": {"kind": "rect", "w": 2, "h": 3}, "level": "max", "extra": [{"k": "v"}], "z": 4}';
    expect(read(shapes, ok)).toEqual({ accepted: ok.length, done: true });
    expect(read(shapes, '{"shape": {"kind": "rect", "r"').accepted).toBe(28); // r belongs to circles
    expect(read(shapes, '{"shape": {"kind": "circle", "r": 1}, "level": 4').accepted).toBe(47);
    expect(read(shapes, '{"shape": {"kind": "circle", "r": 1}, "z": "s"').accepted).toBe(43);
    expect(read(shapes, '{"level": 1}').accepted).toBe(11); // shape is required
  });

  it("decoding's whitespace: at most one space after each , and :, none elsewhere", () => {
    const tight = argumentsPrefix('run', RUN, 'separators');
    for (const ok of ['{"n": 1, "mode": "fast"}', '{"n":1,"mode":"fast"}', '{"mode":"exact", "n":0}'])
      expect(read(tight, ok)).toEqual({ accepted: ok.length, done: true });
    expect(read(tight, '{"n":  1').accepted).toBe(6); // a second space
    expect(read(tight, '{ "n"').accepted).toBe(1); // none after {
    expect(read(tight, '{"n":\n1').accepted).toBe(5); // a space, not a newline
    expect(read(tight, '{"n": 1, "mode": "fast", "note": " a  b "}').done).toBe(true); // inside strings spaces are text
  });

  it('no parameters: any JSON object; a schema that accepts no object is refused naming the tool', () => {
    const any = argumentsPrefix('f', undefined);
    expect(read(any, '{"a": [1, {"b": null}]}')).toEqual({ accepted: 23, done: true });
    expect(() => argumentsPrefix('f', { type: 'string' })).toThrow(
      /tool "f": its parameters schema accepts no JSON object/,
    );
  });
});

/** Values a schema of the supported subset accepts (what the property tests write as documents). */
function validValue(schema: Record<string, unknown>, root: Record<string, unknown>): fc.Arbitrary<unknown> {
  if (typeof schema.$ref === 'string')
    return validValue(
      (root.$defs as Record<string, Record<string, unknown>>)[schema.$ref.split('/').at(-1)!]!,
      root,
    );
  if (Array.isArray(schema.anyOf)) return fc.oneof(...schema.anyOf.map((s) => validValue(s, root)));
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return fc.oneof(...types.map((t) => valueOfType(t, schema, root)));
}

function valueOfType(
  type: unknown,
  schema: Record<string, unknown>,
  root: Record<string, unknown>,
): fc.Arbitrary<unknown> {
  switch (type) {
    case 'integer':
      return fc.integer();
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'string':
      return fc.string({ unit: 'grapheme', maxLength: 8 });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(validValue((schema.items as Record<string, unknown>) ?? { type: 'integer' }, root), {
        maxLength: 3,
      });
    default: {
      const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
      const record = fc.record(
        Object.fromEntries(Object.entries(props).map(([k, s]) => [k, validValue(s, root)])),
        { requiredKeys: (schema.required as string[]) ?? [] },
      );
      const extra = schema.additionalProperties;
      if (extra === false || extra === undefined) return record;
      const more = fc.dictionary(
        fc.constantFrom('z', 'y2'),
        validValue(extra as Record<string, unknown>, root),
        { maxKeys: 2 },
      );
      return fc.tuple(record, more).map(([r, m]) => ({ ...r, ...m }));
    }
  }
}

const CASES = [
  ['run', RUN],
  ['shapes', SHAPES],
  ['python', PYTHON],
] as const;
const SPELLINGS = [
  (v: unknown) => JSON.stringify(v),
  (v: unknown) => JSON.stringify(v, null, 2),
  pythonJsonDumps,
];

describe('JsonSchemaPrefix properties (fast-check, ajv as the oracle)', () => {
  for (const [name, schema] of CASES) {
    const make = argumentsPrefix(name, schema);
    const validate = ajv.compile(schema);
    const docs = validValue(schema, schema)
      .filter((v) => validate(v))
      .chain((v) => fc.constantFrom(...SPELLINGS.map((s) => s(v))));

    it(`${name}: every prefix of a valid document is accepted, and only the whole one is done`, () => {
      fc.assert(
        fc.property(docs, fc.nat(), (text, cut) => {
          const p = make();
          for (let i = 0; i < text.length; i++) {
            if (p.done) return false;
            if (!p.feed(text[i]!)) return false;
          }
          return p.done && completable(make, text.slice(0, cut % text.length), validate);
        }),
        { numRuns: 300 },
      );
    });

    it(`${name}: clones reading whole pieces (shared first steps, string runs) agree with feeding one character at a time`, () => {
      const piece = fc.string({
        unit: fc.constantFrom(...'{}[]",:0123456789-.e tfnul\\xzamodeshp'.split('')),
        maxLength: 6,
      });
      fc.assert(
        fc.property(
          docs,
          fc.nat(),
          fc.array(fc.oneof(piece, fc.nat(12)), { minLength: 1, maxLength: 8 }),
          (doc, cut, pieces) => {
            const prefix = doc.slice(0, cut % doc.length);
            // random pieces, and pieces of the document's own continuation (keys then their quote)
            const more = pieces.map((p) =>
              typeof p === 'string' ? p : doc.slice(prefix.length, prefix.length + 1 + p),
            );
            const base = make();
            for (const ch of prefix) base.feed(ch);
            return more.every((m) => {
              const fresh = read(make, prefix + m);
              const c = base.clone();
              const used = c.read(m);
              if (fresh.accepted < prefix.length + m.length && !(fresh.done && used >= 0)) return used === -1;
              return used >= 0 && c.done === read(make, prefix + m.slice(0, used)).done;
            });
          },
        ),
        { numRuns: 300 },
      );
    });

    it(`${name}: a mutated document is refused at the first bad character; what is accepted whole validates`, () => {
      const alphabet = fc.constantFrom(...'{}[]",:0123456789-.eE tfnul\\xzamodeshp'.split(''));
      const mutation = fc.tuple(docs, fc.nat(), alphabet, fc.constantFrom('replace', 'insert', 'delete'));
      fc.assert(
        fc.property(mutation, ([doc, at, ch, how]) => {
          const k = at % doc.length;
          const bad =
            doc.slice(0, k) + (how === 'delete' ? '' : ch) + doc.slice(how === 'insert' ? k : k + 1);
          const { accepted, done } = read(make, bad);
          if (accepted < k) return false; // the untouched prefix is a prefix of a valid document
          if (accepted === bad.length && done) {
            // accepted whole: it must be JSON and valid
            return validate(JSON.parse(bad));
          }
          // refused (or unfinished): what was accepted must still be completable to a valid document
          return completable(make, bad.slice(0, accepted), validate);
        }),
        { numRuns: 300 },
      );
    });
  }
});

/**
 * Whether `prefix` can be completed to a document ajv accepts: the checker's own completion, judged
 * by JSON.parse and ajv (not by the checker), so a checker that let a dead prefix through fails here.
 */
function completable(
  make: () => JsonSchemaPrefix,
  prefix: string,
  validate: (v: unknown) => boolean,
): boolean {
  const p = make();
  for (const ch of prefix) if (!p.feed(ch)) return false;
  const rest = p.completion();
  if (rest === null) return false;
  try {
    return validate(JSON.parse(prefix + rest)) && read(make, prefix + rest).done;
  } catch {
    return false;
  }
}
