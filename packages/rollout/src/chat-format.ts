import { CHATML_TOOLS_TEMPLATE, type ChatMessage, renderChat } from '@agentrl/protocol';
import { RolloutError, RolloutErrorCode } from './errors.js';

/** The text pieces the agent loop needs from a chat template. */
export interface ChatFormat {
  /** The prompt text, ending with the generation prompt (e.g. `<|im_start|>assistant\n`). */
  renderPrompt(messages: readonly ChatMessage[]): string;
  /**
   * The text appended after an assistant turn that asked for a tool: whatever closes the turn
   * (unless the model already sampled it), the turn holding `toolResponse`, and the next
   * generation prompt. Only this text is encoded, so earlier tokens never change. `toolResponse` is
   * that turn's content: `wrapToolResponse(output)` for the user role (rStar2-Agent, the default),
   * the bare output for the tool role.
   */
  toolResponseSegment(assistantText: string, toolResponse: string): string;
  /** The text that ends an assistant turn (e.g. `<|im_end|>`), used as a stop string. */
  readonly endOfTurn: string;
  /** The role the tool's output is sent back in. */
  readonly toolRole: 'user' | 'tool';
  /**
   * True when rendering the whole conversation gives back prompt + sampled turns + segments, so the
   * trajectory's text is what `apply_chat_template` would write. False for templates that rewrite
   * earlier turns: Qwen3 with `enable_thinking: false` opens every turn with an empty think block
   * that a re-render drops from all but the last assistant turn.
   */
  readonly appendOnly: boolean;
}

export interface ChatFormatOptions {
  /** Jinja chat template (HF `chat_template`); defaults to @agentrl/protocol's CHATML_TOOLS_TEMPLATE. */
  template?: string;
  /**
   * Text that ends an assistant turn as the model samples it; default: the special token that
   * opens the template's text after an assistant message (`<|im_end|>` for ChatML), else `eosToken`.
   */
  endOfTurn?: string;
  bosToken?: string;
  eosToken?: string;
  /** Tool schemas rendered into the system prompt (OpenAI/HF `tools` shape). */
  tools?: unknown[];
  /** Extra template variables, as transformers' kwargs (e.g. `{ enable_thinking: false }` for Qwen3). */
  templateKwargs?: Record<string, unknown>;
  /** Role of the message carrying a tool result; default `user` (rStar2-Agent). */
  toolRole?: 'user' | 'tool';
  /** Strings that are one token each; `endOfTurn` is looked up among them. */
  specialTokens?: Iterable<string>;
}

const A = '\u0001assistant-probe\u0001';
const R = '\u0001response-probe\u0001';

/**
 * Builds a ChatFormat from a Jinja chat template, rendered as transformers does (the one renderer,
 * `renderChat` of @agentrl/protocol). The turn boundaries are found by rendering probe conversations
 * and cutting around sentinel strings, so any template that renders message contents in order works
 * without knowing its markup.
 */
export function createChatFormat(options: ChatFormatOptions = {}): ChatFormat {
  const source = {
    chatTemplate: options.template ?? CHATML_TOOLS_TEMPLATE,
    ...(options.bosToken !== undefined ? { bosToken: options.bosToken } : {}),
    eosToken: options.eosToken ?? options.endOfTurn ?? '<|im_end|>',
  };
  const toolRole = options.toolRole ?? 'user';
  const tools = options.tools && options.tools.length > 0 ? { tools: options.tools } : {};
  const render = (messages: readonly { role: string; content: string }[], addGenerationPrompt: boolean) => {
    try {
      return renderChat(source, messages, {
        addGenerationPrompt,
        ...tools,
        ...(options.templateKwargs ? { extra: options.templateKwargs } : {}),
      });
    } catch (err) {
      throw new RolloutError(
        RolloutErrorCode.TEMPLATE_ERROR,
        `rollout: the chat template failed to render: ${(err as Error).message}; check the template or pass the model's own`,
        { cause: err },
      );
    }
  };
  const probeUser = { role: 'user', content: 'q' };
  const probeResponse = toolRole === 'user' ? wrapToolResponse(R) : R;
  const prompt = render([probeUser], true);
  const withResponse = render(
    [probeUser, { role: 'assistant', content: A }, { role: toolRole, content: probeResponse }],
    true,
  );
  const a = withResponse.indexOf(A);
  const r = withResponse.indexOf(probeResponse);
  if (a < 0 || r < a) {
    throw new RolloutError(
      RolloutErrorCode.TEMPLATE_ERROR,
      `rollout: the chat template does not render message contents verbatim and in order (a ${toolRole} turn after an assistant turn); pass a template that does`,
    );
  }
  // Text between the assistant content and the tool response: closes the turn, opens the next one.
  const between = withResponse.slice(a + A.length, r);
  const after = withResponse.slice(r + probeResponse.length);
  const specials = [...(options.specialTokens ?? [])].sort((x, y) => y.length - x.length);
  const endOfTurn =
    options.endOfTurn ??
    specials.find((s) => between.startsWith(s)) ??
    (between.startsWith('<|im_end|>') ? '<|im_end|>' : source.eosToken);
  return {
    endOfTurn,
    toolRole,
    appendOnly: withResponse.slice(0, a) === prompt,
    renderPrompt: (messages) =>
      render(
        messages.map((m) => ({ role: m.role, content: m.content })),
        true,
      ),
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

/** The chat-template facts of a tokenizer (@agentrl/engine's Tokenizer has them all). */
export interface TemplateTokenizer {
  readonly chatTemplate: string | undefined;
  readonly chatTemplates?: Readonly<Record<string, string>>;
  readonly bosToken?: string | undefined;
  readonly eosToken?: string | undefined;
  readonly specialTokens?: ReadonlyMap<string, number>;
  /** added tokens (Qwen's `<tool_call>` is added, not special) */
  readonly addedTokens?: ReadonlyMap<string, number>;
}

/**
 * The ChatFormat of a checkpoint's own tokenizer: its `chat_template` (the `tool_use` one when tools
 * are given and it has one), its bos/eos strings, and its special tokens for the end of turn.
 */
export function createChatFormatForTokenizer(
  tokenizer: TemplateTokenizer,
  options: Omit<ChatFormatOptions, 'template' | 'bosToken' | 'eosToken' | 'specialTokens'> = {},
): ChatFormat {
  const hasTools = (options.tools?.length ?? 0) > 0;
  const template =
    (hasTools ? tokenizer.chatTemplates?.tool_use : undefined) ??
    tokenizer.chatTemplate ??
    tokenizer.chatTemplates?.default;
  if (!template)
    throw new RolloutError(
      RolloutErrorCode.TEMPLATE_ERROR,
      "rollout: the tokenizer has no chat template; add chat_template to the checkpoint's tokenizer_config.json (or chat_template.jinja)",
    );
  return createChatFormat({
    ...options,
    template,
    ...(tokenizer.bosToken !== undefined ? { bosToken: tokenizer.bosToken } : {}),
    ...(tokenizer.eosToken !== undefined ? { eosToken: tokenizer.eosToken } : {}),
    specialTokens: [...(tokenizer.specialTokens?.keys() ?? []), ...(tokenizer.addedTokens?.keys() ?? [])],
  });
}

/** The user-turn content holding a tool's output, as rStar2-Agent writes it. */
export function wrapToolResponse(output: string): string {
  return `<tool_response>\n${output}\n</tool_response>`;
}
