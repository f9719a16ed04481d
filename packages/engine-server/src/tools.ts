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
