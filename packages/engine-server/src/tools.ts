import { renderChat, type TemplateMessage } from '@agentrl/engine';
import type { ServerContext } from './context.js';
import { EngineServerError } from './errors.js';
import { argumentsPrefix, type JsonSchemaPrefix } from './json-prefix.js';
import type { VllmChatRequest } from './request-schemas.js';

type RequestTool = NonNullable<VllmChatRequest['tools']>[number];

/**
 * Tools as vLLM hands them to the chat template: each parsed into `ChatCompletionToolsParam` and
 * dumped back (`serving_chat.py`: `[tool.model_dump() for tool in request.tools]`), so every tool
 * reads `{type, function: {name, description, parameters}}` in that order, a missing description
 * or parameters as null (the template's `tojson` writes `null`), other keys after them.
 */
export function normalizeTools(tools: readonly RequestTool[]): Array<Record<string, unknown>> {
  return tools.map((t) => {
    const { name, description, parameters, ...rest } = t.function as Record<string, unknown>;
    const { type, function: _, ...outer } = t as Record<string, unknown>;
    return {
      type,
      function: { name, description: description ?? null, parameters: parameters ?? null, ...rest },
      ...outer,
    };
  });
}

/** A function a forced call may name, and its `parameters` JSON Schema (absent: any object). */
export interface ForcedTool {
  name: string;
  parameters?: unknown;
}

/**
 * The functions a `tool_choice` forces (vLLM `ChatCompletionRequest.tool_choice`): a named
 * function → that one, "required" → any of the tools, "auto" / "none" / absent → none forced.
 */
export function forcedTools(body: VllmChatRequest): ForcedTool[] {
  const tools = (body.tools ?? []).map((t) => ({ name: t.function.name, parameters: t.function.parameters }));
  return forcedNames(body).map((n) => tools.find((t) => t.name === n)!);
}

function forcedNames(body: VllmChatRequest): string[] {
  const choice = body.tool_choice;
  const names = (body.tools ?? []).map((t) => t.function.name);
  if (choice === undefined || choice === null || choice === 'auto' || choice === 'none') return [];
  if ((choice === 'required' || typeof choice === 'object') && names.length === 0)
    throw new EngineServerError(
      'INVALID_REQUEST',
      'tool_choice forces a tool call, but the request has no tools; add tools or leave tool_choice out',
    );
  if (choice === 'required') return names;
  const name = (choice as { function?: { name?: unknown } }).function?.name;
  if (typeof choice === 'object' && typeof name === 'string') {
    if (!names.includes(name))
      throw new EngineServerError(
        'INVALID_REQUEST',
        `tool_choice names the function ${JSON.stringify(name)}, which is not among the request's tools (${names.join(', ')})`,
      );
    return [name];
  }
  throw new EngineServerError(
    'INVALID_REQUEST',
    `tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": …}}; got ${JSON.stringify(choice)}`,
  );
}

/** Where the chat template's rendering of a call to a function named MARKER ends its frame. */
const MARKER = 'f0rced_t00l_name';

/**
 * A call's text around its arguments: `open` up to them (name included), `close` after them, and
 * the checker of its arguments (the tool's `parameters` schema).
 */
interface CallFrame {
  open: string;
  close: string;
  args: () => JsonSchemaPrefix;
}

/**
 * The frame of a call to `name`, taken from the chat template itself: an assistant turn with one
 * call (arguments `{}`) rendered, cut after the `"arguments": ` key and after `</tool_call>`, so the
 * frame is the template's own tool-call grammar; a template that renders no calls gets the Hermes
 * frame of Qwen's templates, `<tool_call>\n{"name": "…", "arguments": ` … `}\n</tool_call>`.
 */
function callFrame(ctx: ServerContext, name: string): Omit<CallFrame, 'args'> {
  const call = { type: 'function', function: { name: MARKER, arguments: {} } };
  const turn = { role: 'assistant', content: '', tool_calls: [call] } as unknown as TemplateMessage;
  let text = '';
  try {
    text = renderChat(ctx.tokenizer, [{ role: 'user', content: 'q' }, turn], { addGenerationPrompt: false });
  } catch {
    // a template that refuses the probe: the Hermes frame below
  }
  const at = text.indexOf(MARKER);
  const start = text.lastIndexOf('<tool_call>', at);
  const args = text.indexOf('"arguments"', at);
  const colon = text.indexOf(':', args);
  const body = text.indexOf('{}', colon);
  const end = text.indexOf('</tool_call>', body);
  if (at < 0 || start < 0 || args < 0 || colon < 0 || body < 0 || end < 0)
    return { open: `<tool_call>\n{"name": "${name}", "arguments": `, close: '}\n</tool_call>' };
  return {
    open: text.slice(start, body).replace(MARKER, name),
    close: text.slice(body + 2, end + '</tool_call>'.length),
  };
}

/**
 * Every token's text, once per tokenizer (constrained decoding checks them against the frame);
 * special tokens and EOS read as '' so that no constrained step can take them (an EOS inside the
 * arguments would read as string characters otherwise).
 */
const piecesOf = new WeakMap<object, string[]>();
function pieces(ctx: ServerContext): string[] {
  let out = piecesOf.get(ctx.tokenizer);
  if (!out) {
    const special = new Set([...ctx.tokenizer.specialTokens.values(), ...ctx.eosIds]);
    const frame = new Set(['<tool_call>', '</tool_call>']);
    out = Array.from({ length: ctx.served.model.config.vocab_size }, (_, i) => {
      const piece = ctx.codec.piece(i);
      return special.has(i) && !frame.has(piece) ? '' : piece;
    });
    piecesOf.set(ctx.tokenizer, out);
  }
  return out;
}

/**
 * Whether `more` can follow text whose arguments so far left the recogniser in `json` (and, once
 * the object closed, `tail` of the frame's `close`): the arguments stay a JSON object prefix, and
 * whatever follows its closing brace is the next part of `close`.
 */
function fits(json: JsonSchemaPrefix, tail: string, more: string, close: string): boolean {
  let i = 0;
  if (!json.done) {
    const j = json.clone();
    i = j.read(more);
    if (i < 0) return false;
    if (!j.done) return true;
  }
  return close.startsWith(tail + more.slice(i));
}

/** The checker after `args`, and the text after the object's end; null when `args` cannot be one. */
function readArgs(frame: CallFrame, args: string): { json: JsonSchemaPrefix; tail: string } | null {
  const json = frame.args();
  const i = json.read(args);
  return i < 0 ? null : { json, tail: args.slice(i) };
}

/**
 * Forced tool calls by constrained decoding (vLLM answers `tool_choice` named or "required" with
 * guided decoding, `serving_chat.py` / `vllm/v1/structured_output`): every draw may only take a
 * token whose text keeps the output a prefix of a call to one of `tools` in the chat template's own
 * frame (callFrame): the frame up to the arguments, the arguments a JSON object held to the
 * tool's `parameters` schema (json-prefix.ts, as vLLM hands `parameters` to guided decoding in
 * `ChatCompletionRequest._get_guided_json_from_tool`), then the frame's close through
 * `</tool_call>`, then EOS (the turn ends with the call, as vLLM's grammar ends it).
 */
export function toolCallConstraint(
  ctx: ServerContext,
  tools: readonly ForcedTool[],
): (generated: readonly number[]) => ReadonlySet<number> | null {
  const frames: CallFrame[] = tools.map((t) => ({
    ...callFrame(ctx, t.name),
    args: argumentsPrefix(t.name, t.parameters, 'separators'),
  }));
  return (generated) => {
    const text = ctx.codec.decode(generated, false);
    const opening = frames.filter((f) => f.open.length > text.length && f.open.startsWith(text));
    const inside = frames.find((f) => text.startsWith(f.open));
    const args = inside ? readArgs(inside, text.slice(inside.open.length)) : null;
    // A finished call ends the turn, as the grammar's end does under vLLM's guided decoding.
    if (inside && args?.tail === inside.close) return ctx.eosIds.length > 0 ? new Set(ctx.eosIds) : null;
    if (opening.length === 0 && (!inside || !args)) return null;
    const allowed = new Set<number>();
    for (const [id, piece] of pieces(ctx).entries()) {
      if (piece.length === 0) continue;
      const next = text + piece;
      const ok =
        opening.some(
          (f) =>
            f.open.startsWith(next) ||
            (next.startsWith(f.open) && fits(f.args(), '', next.slice(f.open.length), f.close)),
        ) ||
        (inside !== undefined && args !== null && fits(args.json, args.tail, piece, inside.close));
      if (ok) allowed.add(id);
    }
    return allowed.size > 0 ? allowed : null;
  };
}
