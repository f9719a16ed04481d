import { Template } from '@huggingface/jinja';
import { defineErrorCodes, errorClass } from './errors.js';

// The one ChatML of agentrl and its one Jinja renderer. They live here, the lowest package that
// needs them: @agentrl/engine's tokenizers render with them and @agentrl/rollout's chat formats too,
// so rollout needs neither the engine nor its native addon for a template.

/** What went wrong with a chat template (`PROTOCOL_*`). */
export const ProtocolErrorCode = defineErrorCodes('PROTOCOL', {
  CHAT_TEMPLATE: 'a chat template is missing, does not parse, or fails to render the messages',
});

/** The error of @agentrl/protocol's chat-template renderer. */
export class ProtocolError extends errorClass('ProtocolError', ProtocolErrorCode) {}

// The one ChatML of agentrl, in two layouts that share the turn markup below.
const CHATML_TURN = '<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n';
const CHATML_GENERATION_PROMPT = '{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}';

/**
 * ChatML (Qwen style) without a tool list, whatever `tools` says: what the char tokenizer renders by
 * default, since a char-level model pays for every character of a prompt in every rollout.
 */
export const CHATML_TEMPLATE = `{%- for message in messages %}${CHATML_TURN}{% endfor %}${CHATML_GENERATION_PROMPT}`;

/**
 * ChatML as Qwen2.5 writes it, with the Hermes tool list in the system turn when `tools` are given
 * (without tools it renders what CHATML_TEMPLATE does). @agentrl/rollout's `createChatFormat` uses it
 * when the model brings no template of its own; a model's `chat_template` replaces it.
 */
export const CHATML_TOOLS_TEMPLATE = `{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>{% for tool in tools %}
{{ tool | tojson }}{% endfor %}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}{%- for message in messages %}{%- if not (message.role == 'system' and loop.first) %}${CHATML_TURN}{% endif %}{%- endfor %}${CHATML_GENERATION_PROMPT}`;

/** A message as chat templates read it: `content` may be null next to `tool_calls` (OpenAI shape). */
export interface TemplateMessage {
  role: string;
  content: string | null;
  [key: string]: unknown;
}

export interface RenderChatOptions {
  /** end with the opening of an assistant turn */
  addGenerationPrompt?: boolean;
  /** tool schemas, passed to templates that take `tools` (OpenAI `{type:'function', function}` shape) */
  tools?: unknown[];
  /** RAG documents, passed as `documents` */
  documents?: unknown[];
  /** extra template variables, as transformers' `**kwargs` (e.g. `enable_thinking: false` for Qwen3) */
  extra?: Record<string, unknown>;
}

/** The parts of a tokenizer a chat template reads (@agentrl/engine's tokenizers have them all). */
export interface ChatTemplateSource {
  /** The default Jinja template (HF `chat_template`). */
  readonly chatTemplate?: string | undefined;
  /** Named templates (`tool_use`, `default`) when tokenizer_config.json has a list. */
  readonly chatTemplates?: Readonly<Record<string, string>> | undefined;
  readonly bosToken?: string | undefined;
  readonly eosToken?: string | undefined;
  readonly padToken?: string | undefined;
  readonly unkToken?: string | undefined;
}

const compiled = new Map<string, Template>();

/** The template source transformers would pick: `tool_use` when tools are given and it exists. */
export function selectChatTemplate(tokenizer: ChatTemplateSource, hasTools: boolean): string {
  const named = tokenizer.chatTemplates;
  const source = (hasTools ? named?.tool_use : undefined) ?? tokenizer.chatTemplate ?? named?.default;
  if (!source)
    throw new ProtocolError(
      'CHAT_TEMPLATE',
      'this tokenizer has no chat template; add chat_template to tokenizer_config.json (or a chat_template.jinja file) or pass one in the options',
    );
  return source;
}

/** Parses a Jinja template once; a template that does not parse fails with the parser's reason. */
export function compileChatTemplate(source: string): Template {
  let template = compiled.get(source);
  if (!template) {
    try {
      template = new Template(source);
    } catch (err) {
      throw new ProtocolError(
        'CHAT_TEMPLATE',
        `the chat template does not parse: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
    compiled.set(source, template);
  }
  return template;
}

/**
 * Renders messages with the tokenizer's Jinja chat template (@huggingface/jinja), with the variables
 * transformers' `apply_chat_template(messages, tools=…, add_generation_prompt=…, **kwargs)` passes
 * (`src/transformers/utils/chat_template_utils.py`, `render_jinja_template`): `messages`, `tools`
 * (None when absent), `documents`, `add_generation_prompt`, the special-token strings
 * (`bos_token`, `eos_token`, `pad_token`, `unk_token`; a token the tokenizer lacks is undefined, as
 * in `special_tokens_map`) and the kwargs. @huggingface/jinja supplies the `raise_exception` and
 * `strftime_now` globals transformers adds, and a `tojson` that writes `", "` / `": "` separators
 * and non-ASCII as is, like transformers' `json.dumps(ensure_ascii=False)`.
 */
export function renderChat(
  tokenizer: ChatTemplateSource,
  messages: readonly TemplateMessage[] | readonly { role: string; content: string }[],
  options: RenderChatOptions = {},
): string {
  const hasTools = (options.tools?.length ?? 0) > 0;
  const template = compileChatTemplate(selectChatTemplate(tokenizer, hasTools));
  const tokens: Record<string, string> = {};
  if (tokenizer.bosToken !== undefined) tokens.bos_token = tokenizer.bosToken;
  if (tokenizer.eosToken !== undefined) tokens.eos_token = tokenizer.eosToken;
  if (tokenizer.padToken !== undefined) tokens.pad_token = tokenizer.padToken;
  if (tokenizer.unkToken !== undefined) tokens.unk_token = tokenizer.unkToken;
  try {
    return template.render({
      ...tokens,
      ...options.extra,
      messages,
      tools: hasTools ? options.tools : null,
      documents: options.documents ?? null,
      add_generation_prompt: options.addGenerationPrompt ?? false,
    });
  } catch (err) {
    throw new ProtocolError(
      'CHAT_TEMPLATE',
      `the chat template failed to render: ${(err as Error).message}; check the messages (roles, order) against what the template accepts`,
      { cause: err },
    );
  }
}
