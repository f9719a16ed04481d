/**
 * The one error base of agentrl. Every package has one error class that extends `AgentrlError` and one
 * code table made by `defineErrorCodes`, whose values carry the package's prefix
 * (`ROLLOUT_ENGINE_TIMEOUT`, `EXECUTOR_QUEUE_FULL`), so a code never collides across packages and a
 * caller can branch on `err.code` alone, never on the message.
 */
export class AgentrlError<C extends string = string> extends Error {
  readonly code: C;

  constructor(code: C, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** The code table `defineErrorCodes` returns: each key maps to `${PREFIX}_${KEY}`. */
export type ErrorCodeTable<P extends string, T extends Record<string, string>> = {
  readonly [K in keyof T & string]: `${P}_${K}`;
};

/** The union of a code table's values. */
export type ErrorCodeOf<Table> = Table[keyof Table];

/**
 * A package's code table from its prefix and `{ KEY: 'when this code is raised' }`. The descriptions
 * stay readable at run time through `describeErrorCode`, so docs and `--help` can list them.
 */
export function defineErrorCodes<const P extends string, const T extends Record<string, string>>(
  prefix: P,
  descriptions: T,
): ErrorCodeTable<P, T> {
  if (!/^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/.test(prefix)) {
    throw new TypeError(`defineErrorCodes: prefix "${prefix}" must be UPPER_SNAKE_CASE (MATH_VERIFY)`);
  }
  const table: Record<string, string> = {};
  for (const key of Object.keys(descriptions)) {
    if (!/^[A-Z][A-Z0-9_]*$/.test(key)) {
      throw new TypeError(`defineErrorCodes: key "${key}" of ${prefix} must be UPPER_SNAKE_CASE`);
    }
    const code = `${prefix}_${key}`;
    table[key] = code;
    DESCRIPTIONS.set(code, descriptions[key] ?? '');
  }
  return Object.freeze(table) as ErrorCodeTable<P, T>;
}

const DESCRIPTIONS = new Map<string, string>();

/** A code of `Table` as a call site may write it: its key (`'INVALID_CONFIG'`) or its full code. */
export type ErrorCodeInput<Table> = (keyof Table & string) | Table[keyof Table];

/**
 * The full code for a key or a full code of `table`, so `new EngineError('INVALID_CONFIG', …)` and
 * `new EngineError(EngineErrorCode.INVALID_CONFIG, …)` both carry `ENGINE_INVALID_CONFIG`.
 */
export function errorCode<Table extends Readonly<Record<string, string>>>(
  table: Table,
  code: ErrorCodeInput<Table>,
): Table[keyof Table] {
  if (Object.hasOwn(table, code)) return table[code as keyof Table];
  if ((Object.values(table) as string[]).includes(code)) return code as Table[keyof Table];
  throw new TypeError(`errorCode: "${code}" is neither a key nor a code of this table`);
}

/** What a code means, as its package declared it; undefined for a code no package defined. */
export function describeErrorCode(code: string): string | undefined {
  return DESCRIPTIONS.get(code);
}

/** True for any agentrl error, or (with `prefix`) for one raised by that package. */
export function isAgentrlError(err: unknown, prefix?: string): err is AgentrlError {
  return err instanceof AgentrlError && (prefix === undefined || err.code.startsWith(`${prefix}_`));
}

/** What a package error's constructor takes besides code and message. */
export interface PackageErrorOptions {
  cause?: unknown;
  /** The offending input, named as a reader would index it (`groups[3].reward`, `options.backend`). */
  field?: string;
}

/** A package's error class, as `errorClass` makes it. */
export interface PackageErrorClass<Table extends Readonly<Record<string, string>>> {
  new (
    code: ErrorCodeInput<Table>,
    message: string,
    options?: PackageErrorOptions,
  ): AgentrlError<Table[keyof Table]> & { readonly field: string | undefined };
}

/**
 * The base of a package's one error class: `class EngineError extends errorClass('EngineError',
 * EngineErrorCode, 'engine') {}`. The constructor takes a key or a full code of `table`; the message
 * reads `engine: <field> <message>` (no scope prefix when `scope` is empty).
 */
export function errorClass<Table extends Readonly<Record<string, string>>>(
  name: string,
  table: Table,
  scope = '',
): PackageErrorClass<Table> {
  return class extends AgentrlError<Table[keyof Table]> {
    override readonly name = name;
    readonly field: string | undefined;

    constructor(code: ErrorCodeInput<Table>, message: string, options: PackageErrorOptions = {}) {
      const where = options.field ? `${options.field} ` : '';
      super(errorCode(table, code), `${scope ? `${scope}: ` : ''}${where}${message}`, {
        cause: options.cause,
      });
      this.field = options.field;
    }
  };
}
