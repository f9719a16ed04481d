import {
  type ChatTemplateSource,
  isAgentrlError,
  compileChatTemplate as protocolCompile,
  renderChat as protocolRender,
  selectChatTemplate as protocolSelect,
  type RenderChatOptions,
  type TemplateMessage,
} from '@agentrl/protocol';
import { EngineError } from '../errors.js';

// The ChatML templates and the renderer live in @agentrl/protocol (rollout uses them without the
// engine); the engine keeps its names and reports their failures as its own TOKENIZER errors.
export {
  CHATML_TEMPLATE,
  CHATML_TOOLS_TEMPLATE,
  type RenderChatOptions,
  type TemplateMessage,
} from '@agentrl/protocol';

function asEngineError<T>(run: () => T): T {
  try {
    return run();
  } catch (err) {
    if (isAgentrlError(err) && err.code === 'PROTOCOL_CHAT_TEMPLATE') {
      throw new EngineError('TOKENIZER', err.message, { cause: err });
    }
    throw err;
  }
}

/** The template source transformers would pick: `tool_use` when tools are given and it exists. */
export function selectChatTemplate(tokenizer: ChatTemplateSource, hasTools: boolean): string {
  return asEngineError(() => protocolSelect(tokenizer, hasTools));
}

/** Parses a Jinja template once; a template that does not parse fails with the parser's reason. */
export function compileChatTemplate(source: string): ReturnType<typeof protocolCompile> {
  return asEngineError(() => protocolCompile(source));
}

/** Renders messages with the tokenizer's chat template, as `renderChat` of @agentrl/protocol does. */
export function renderChat(
  tokenizer: ChatTemplateSource,
  messages: readonly TemplateMessage[] | readonly { role: string; content: string }[],
  options: RenderChatOptions = {},
): string {
  return asEngineError(() => protocolRender(tokenizer, messages, options));
}
