import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import type { z } from 'zod';
import type { RunRequest, RunResult } from '../types.js';

/** What a peer-API plugin needs from the HTTP server it is registered on. */
export interface CompatOptions {
  /**
   * Runs calls through the server's metrics and backend (http-server's runAll); with `reply`, calls whose
   * caller hangs up are cancelled.
   */
  runAll(requests: RunRequest[], reply?: FastifyReply): Promise<RunResult[]>;
  /** Whether `n` more calls may be accepted now (back-pressure). */
  admit(n: number): boolean;
  /** The HTTP status refused calls get (the server's own choice: 504, what verl retries), with retry-after: 1. */
  overloadStatus?: number;
  /** Calls accepted and not answered yet. */
  pending(): number;
  /** Workers behind the backend. */
  workers(): Promise<number>;
}

/** One entry of FastAPI's 422 body, as pydantic v2 reports it: `{type, loc, msg, input}`. */
export interface FastApiErrorItem {
  type: string;
  loc: (string | number)[];
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

/** A request body that failed validation; answered 422 `{detail: [...]}` by useFastApiErrors. */
export class RequestValidationError extends Error {
  constructor(readonly detail: FastApiErrorItem[]) {
    super(detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; '));
  }
}

/** Parses a body with `schema` or throws RequestValidationError in FastAPI's shape. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  throw new RequestValidationError(parsed.error.issues.map((issue) => toFastApi(issue, body)));
}

/**
 * Answers errors of the plugin's routes the way a FastAPI app does: validation and unreadable JSON with 422
 * `{detail: [...]}`, anything else with its status and `{detail: message}`.
 */
export function useFastApiErrors(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, _req, reply) => {
    if (error instanceof RequestValidationError) return reply.code(422).send({ detail: error.detail });
    if (error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
      return reply
        .code(422)
        .send({ detail: [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }] });
    }
    if (error.statusCode === 400 && (error instanceof SyntaxError || error.code?.startsWith('FST_ERR_CTP'))) {
      const detail = [
        {
          type: 'json_invalid',
          loc: ['body', 0],
          msg: 'JSON decode error',
          input: {},
          ctx: { error: error.message },
        },
      ];
      return reply.code(422).send({ detail });
    }
    return reply.code(error.statusCode ?? 500).send({ detail: error.message });
  });
}

function toFastApi(issue: z.core.$ZodIssue, body: unknown): FastApiErrorItem {
  const loc = ['body', ...issue.path.map((p) => (typeof p === 'number' ? p : String(p)))];
  const input = issue.path.reduce<unknown>(
    (v, key) => (v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[key] : undefined),
    body,
  );
  if (input === undefined) return { type: 'missing', loc, msg: 'Field required', input: null };
  switch (issue.code) {
    case 'invalid_type': {
      const [type, msg] = TYPE_ERRORS[issue.expected] ?? ['value_error', issue.message];
      return { type, loc, msg, input };
    }
    case 'invalid_value': {
      const options = issue.values.map((v) => `'${String(v)}'`);
      const expected =
        options.length > 1 ? `${options.slice(0, -1).join(', ')} or ${options.at(-1)}` : options[0];
      return { type: 'literal_error', loc, msg: `Input should be ${expected}`, input, ctx: { expected } };
    }
    case 'too_small':
      if (issue.origin === 'array') {
        const n = Array.isArray(input) ? input.length : 0;
        const min = Number(issue.minimum);
        const msg = `List should have at least ${min} item${min === 1 ? '' : 's'} after validation, not ${n}`;
        return {
          type: 'too_short',
          loc,
          msg,
          input,
          ctx: { field_type: 'List', min_length: min, actual_length: n },
        };
      }
      return { type: 'greater_than_equal', loc, msg: issue.message, input };
    default:
      return { type: 'value_error', loc, msg: issue.message, input };
  }
}

/** pydantic v2's error type and message per expected type. */
const TYPE_ERRORS: Record<string, [string, string]> = {
  string: ['string_type', 'Input should be a valid string'],
  number: ['float_type', 'Input should be a valid number'],
  int: ['int_type', 'Input should be a valid integer'],
  boolean: ['bool_type', 'Input should be a valid boolean'],
  array: ['list_type', 'Input should be a valid list'],
  record: ['dict_type', 'Input should be a valid dictionary'],
  object: ['model_attributes_type', 'Input should be a valid dictionary or object to extract fields from'],
};
