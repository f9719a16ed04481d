import type { ChatMessage } from '@agentrl/protocol';
import { Template } from '@huggingface/jinja';
import { RolloutError, RolloutErrorCode } from './errors.js';

/**
 * ChatML as Qwen2.5 writes it, with the Hermes tool list. The default when the model brings no
 * template of its own; a model's `tokenizer_config.json` `chat_template` replaces it.
 */
export const CHATML_TEMPLATE = `{%- if tools %}<|im_start|>system
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
{% endif %}{%- for message in messages %}{%- if not (message.role == 'system' and loop.first) %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}`;

/** The text pieces the agent loop needs from a chat template. */
export interface ChatFormat {
  /** The prompt text, ending with the generation prompt (e.g. `<|im_start|>assistant\n`). */
  renderPrompt(messages: readonly ChatMessage[]): string;
  /**
   * The text appended after an assistant turn that asked for a tool: whatever closes the turn
   * (unless the model already sampled it), the user turn holding `toolResponse`, and the next
   * generation prompt. Only this text is encoded, so earlier tokens never change.
   */
  toolResponseSegment(assistantText: string, toolResponse: string): string;
  /** The text that ends an assistant turn (e.g. `<|im_end|>`), used as a stop string. */
  readonly endOfTurn: string;
}

export interface ChatFormatOptions {
  /** Jinja chat template (HF `chat_template`); defaults to ChatML. */
  template?: string;
  /** Token that ends an assistant turn as the model samples it; defaults to `<|im_end|>`. */
  endOfTurn?: string;
  bosToken?: string;
  eosToken?: string;
  /** Tool schemas rendered into the system prompt (OpenAI/HF `tools` shape). */
  tools?: unknown[];
}

const A = '\u0001assistant-probe\u0001';
const R = '\u0001response-probe\u0001';

/**
 * Builds a ChatFormat from a Jinja chat template. The turn boundaries are found by rendering probe
 * conversations and cutting around sentinel strings, so any template that renders messages in
 * order works, without knowing its markup.
 */
export function createChatFormat(options: ChatFormatOptions = {}): ChatFormat {
  const template = new Template(options.template ?? CHATML_TEMPLATE);
  const endOfTurn = options.endOfTurn ?? '<|im_end|>';
  const render = (messages: readonly ChatMessage[], addGenerationPrompt: boolean) => {
    try {
      return template.render({
        messages: messages.map((m) => ({ role: m.role, content: m.content })),
        add_generation_prompt: addGenerationPrompt,
        bos_token: options.bosToken ?? '',
        eos_token: options.eosToken ?? endOfTurn,
        ...(options.tools && options.tools.length > 0 ? { tools: options.tools } : {}),
      });
    } catch (err) {
      throw new RolloutError(
        RolloutErrorCode.TEMPLATE_ERROR,
        `rollout: the chat template failed to render: ${(err as Error).message}; check the template or pass the model's own`,
        { cause: err },
      );
    }
  };
  const probeUser: ChatMessage = { role: 'user', content: 'q' };
  const closed = render([probeUser, { role: 'assistant', content: A }], false);
  const withResponse = render(
    [probeUser, { role: 'assistant', content: A }, { role: 'user', content: R }],
    true,
  );
  const a = closed.indexOf(A);
  const r = withResponse.indexOf(R);
  const a2 = withResponse.indexOf(A);
  if (a < 0 || r < 0 || a2 < 0 || !withResponse.startsWith(closed.slice(0, a))) {
    throw new RolloutError(
      RolloutErrorCode.TEMPLATE_ERROR,
      'rollout: the chat template does not render message contents verbatim and in order; pass a template that does',
    );
  }
  // Text between the assistant content and the tool response: closes the turn, opens the user turn.
  const between = withResponse.slice(a2 + A.length, r);
  const after = withResponse.slice(r + R.length);
  return {
    endOfTurn,
    renderPrompt: (messages) => render(messages, true),
    toolResponseSegment(assistantText, toolResponse) {
      // When the model sampled the end-of-turn token itself, the template's close is partly present.
      const lead =
        assistantText.endsWith(endOfTurn) && between.startsWith(endOfTurn)
          ? between.slice(endOfTurn.length)
          : between;
      return lead + toolResponse + after;
    },
  };
}

/** The user-turn content holding a tool's output, as rStar2-Agent writes it. */
export function wrapToolResponse(output: string): string {
  return `<tool_response>\n${output}\n</tool_response>`;
}
