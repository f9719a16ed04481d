import { renderChat, type TemplateMessage } from '@agentrl/engine';
import type { ServerContext } from './context.js';
import { EngineServerError } from './errors.js';
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

/**
 * The functions a `tool_choice` forces (vLLM `ChatCompletionRequest.tool_choice`): a named
 * function → that one, "required" → any of the tools, "auto" / "none" / absent → none forced.
 */
export function forcedTools(body: VllmChatRequest): string[] {
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
 * The text a call to `name` starts with, up to its arguments: taken from the chat template itself
 * (an assistant turn with one call rendered, cut after the name and the `"arguments": ` key), so
 * the frame is the template's own tool-call grammar; a template that renders no calls gets the
 * Hermes frame of Qwen's templates, `<tool_call>\n{"name": "…", "arguments": `.
 */
function callFrame(ctx: ServerContext, name: string, messages: VllmChatRequest['messages']): string {
  const call = { type: 'function', function: { name: MARKER, arguments: {} } };
  const turn = { role: 'assistant', content: '', tool_calls: [call] } as unknown as TemplateMessage;
  const user = (messages.find((m) => m.role === 'user') ?? { role: 'user', content: 'q' }) as TemplateMessage;
  let text = '';
  try {
    text = renderChat(ctx.tokenizer, [{ ...user, content: 'q' }, turn], { addGenerationPrompt: false });
  } catch {
    // a template that refuses the probe: the Hermes frame below
  }
  const open = text.lastIndexOf('<tool_call>', text.indexOf(MARKER));
  const at = text.indexOf(MARKER);
  const args = text.indexOf('"arguments"', at);
  if (open < 0 || at < 0 || args < 0) return `<tool_call>\n{"name": "${name}", "arguments": `;
  const colon = text.indexOf(':', args);
  const after = text.slice(colon + 1).startsWith(' ') ? colon + 2 : colon + 1;
  return text.slice(open, after).replace(MARKER, name);
}

/** Every token's text, once per tokenizer (constrained decoding checks them against the frame). */
const piecesOf = new WeakMap<object, string[]>();
function pieces(ctx: ServerContext): string[] {
  let out = piecesOf.get(ctx.tokenizer);
  if (!out) {
    out = Array.from({ length: ctx.served.model.config.vocab_size }, (_, i) => ctx.codec.piece(i));
    piecesOf.set(ctx.tokenizer, out);
  }
  return out;
}

/**
 * Forced tool calls by constrained decoding (vLLM answers `tool_choice` named or "required" with
 * guided decoding, `serving_chat.py` / `structured_outputs`): until the output holds a whole call
 * frame of one of `names` (callFrame: the chat template's own tool-call prefix, name included),
 * each draw may only take tokens whose text keeps the output a prefix of such a frame, so the turn
 * opens a call to a permitted function whatever the model prefers. From the arguments on the draw
 * is free: the arguments are not constrained to JSON (planned); a turn whose arguments do not parse
 * comes back as content, as vLLM's Hermes parser returns unparsable output.
 */
export function toolCallConstraint(
  ctx: ServerContext,
  names: readonly string[],
  messages: VllmChatRequest['messages'],
): (generated: readonly number[]) => ReadonlySet<number> | null {
  const frames = names.map((n) => callFrame(ctx, n, messages));
  return (generated) => {
    const text = ctx.codec.decode(generated, false);
    const open = frames.filter((f) => f.length > text.length && f.startsWith(text));
    if (open.length === 0) return null;
    const allowed = new Set<number>();
    for (const [id, piece] of pieces(ctx).entries()) {
      if (piece.length === 0) continue;
      const next = text + piece;
      if (open.some((f) => f.startsWith(next) || next.startsWith(f))) allowed.add(id);
    }
    return allowed.size > 0 ? allowed : null;
  };
}
