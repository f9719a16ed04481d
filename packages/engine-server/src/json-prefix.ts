import { EngineServerError } from './errors.js';
import { awaitsMember, canEnd, inText, type Stack, step, stringRun, WS } from './json-grammar.js';
import { finish } from './json-prefix-finish.js';
import { ANY, compileSchema, type SchemaNode } from './json-schema-node.js';

/**
 * Whether the text read so far is a prefix of some JSON value a schema accepts, one character at
 * a time: the checker constrained decoding runs over each candidate token's text, as vLLM's
 * structured-output backends run a JSON-schema grammar over the vocabulary when `tool_choice`
 * names a function (`ChatCompletionRequest._get_guided_json_from_tool` in
 * `vllm/entrypoints/openai/protocol.py` hands the tool's `parameters` to guided decoding).
 * JSON's grammar is RFC 8259's (numbers too); the schema part is what json-schema-node.ts compiles:
 * an object may close only once its required keys are written, a key must be one the schema
 * allows (never one already written), an enum value must be spelled as one of its values.
 * Several parse states run side by side where anyOf branches (or enum spellings) share a prefix.
 */
export class JsonSchemaPrefix {
  /** whether the last character read was a `,` or `:` between values (one space may follow) */
  private afterSeparator = false;
  /**
   * What each next character leads to from the state this checker was cloned in, shared by its
   * clones until they read on: constrained decoding clones one checker per vocabulary token, and
   * most tokens are settled by their first character.
   */
  private next: Map<string, { states: readonly Stack[]; afterSeparator: boolean } | null> | null = null;

  private constructor(
    private states: readonly Stack[],
    private readonly whitespace: Whitespace,
  ) {}

  /** A checker of values of `alts` (compileSchema's output). */
  static of(alts: readonly SchemaNode[], whitespace: Whitespace = 'any'): JsonSchemaPrefix {
    return new JsonSchemaPrefix([[{ k: 'value', alts }]], whitespace);
  }

  /** Whether the text read so far is a whole value the schema accepts (nothing may follow it). */
  get done(): boolean {
    return this.states.some((s) => s.length === 0 || (s.length === 1 && canEnd(s[0]!)));
  }

  clone(): JsonSchemaPrefix {
    const c = new JsonSchemaPrefix(this.states, this.whitespace);
    c.afterSeparator = this.afterSeparator;
    this.next ??= new Map();
    c.next = this.next;
    return c;
  }

  /**
   * Text that completes what was read into a value the schema accepts (null if none was found):
   * the witness that every prefix the checker lets through can still end well, which the tests
   * check with a real validator; constrained decoding never walks into a dead end.
   */
  completion(): string | null {
    for (const s of this.states) {
      const rest = finish(s);
      if (rest !== null) return rest;
    }
    return null;
  }

  /** Reads one character; false (and nothing read) when no accepted value starts with the text plus it. */
  feed(ch: string): boolean {
    const shared = this.next;
    this.next = null;
    if (shared) {
      let after = shared.get(ch);
      if (after === undefined) {
        after = this.step(ch) ? { states: this.states, afterSeparator: this.afterSeparator } : null;
        shared.set(ch, after);
      }
      if (after === null) return false;
      this.states = after.states;
      this.afterSeparator = after.afterSeparator;
      return true;
    }
    return this.step(ch);
  }

  private step(ch: string): boolean {
    const refused = this.whitespace === 'separators' && WS.has(ch) && !(ch === ' ' && this.afterSeparator);
    const next =
      this.states.length === 1
        ? refused && !inText(this.states[0]!)
          ? []
          : step(this.states[0]!, ch)
        : this.states.flatMap((s) => (refused && !inText(s) ? [] : step(s, ch)));
    if (next.length === 0) return false;
    this.states = next;
    this.afterSeparator = (ch === ',' || ch === ':') && next.some(awaitsMember);
    return true;
  }

  /**
   * Reads `text` until the value is done: how many characters that took (all of them when it is
   * not done yet), or -1 when some character cannot come next (the checker is then part-way: read
   * a clone). Plain runs inside a string are read at once (stringRun).
   */
  read(text: string): number {
    let i = 0;
    while (i < text.length && !this.done) {
      const run = this.states.length === 1 ? stringRun(this.states[0]!, text, i) : undefined;
      if (run === null) return -1;
      if (run) {
        this.states = [run.stack];
        this.afterSeparator = false;
        this.next = null;
        i = run.end;
      } else if (this.feed(text[i]!)) i += 1;
      else return -1;
    }
    return i;
  }
}

/**
 * Where whitespace may go between tokens: `any` (RFC 8259: anywhere, any amount) or `separators`,
 * at most one space after each `,` and `:` and none elsewhere, which admits both Python's
 * `json.dumps` spelling (the one chat templates render calls in) and the compact one. Decoding
 * uses `separators` (vLLM's xgrammar backend compiles with `any_whitespace=not
 * disable_any_whitespace`, `vllm/v1/structured_output/backend_xgrammar.py`; here the bound is
 * always on): with any whitespace a small model can spend its whole budget on spaces.
 */
export type Whitespace = 'any' | 'separators';

/**
 * The checker of a tool call's arguments: a JSON object held to the tool's `parameters` schema
 * (absent or null parameters: any object). The Hermes frame needs an object, so a schema that
 * accepts no object is refused with a message naming the tool.
 */
export function argumentsPrefix(
  name: string,
  parameters: unknown,
  whitespace: Whitespace = 'any',
): () => JsonSchemaPrefix {
  const alts = (parameters === undefined || parameters === null ? ANY : compileSchema(parameters))
    .filter((n) => n.types.has('object'))
    .map((n) => ({ ...n, types: new Set(['object'] as const), ...objectLiterals(n) }))
    .filter((n) => n.literals === undefined || n.literals.length > 0);
  if (alts.length === 0)
    throw new EngineServerError(
      'INVALID_REQUEST',
      `tool ${JSON.stringify(name)}: its parameters schema accepts no JSON object, and a forced call's arguments are one; give it {"type": "object", …}`,
    );
  return () => JsonSchemaPrefix.of(alts, whitespace);
}

function objectLiterals(n: SchemaNode): { literals?: readonly string[] } {
  return n.literals ? { literals: n.literals.filter((t) => t.startsWith('{')) } : {};
}
