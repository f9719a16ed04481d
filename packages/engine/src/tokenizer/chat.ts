import type { ChatMessage } from '@agentrl/protocol';
import { Template } from '@huggingface/jinja';
import { EngineError } from '../errors.js';
import type { Tokenizer } from './types.js';

/** ChatML (Qwen style) without tools: what the char tokenizer renders by default. */
export const CHATML_TEMPLATE =
  "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

export interface RenderChatOptions {
  /** end with the opening of an assistant turn */
  addGenerationPrompt?: boolean;
  /** tool schemas, passed to templates that take `tools` */
  tools?: unknown[];
  /** extra template variables (e.g. enable_thinking for Qwen3) */
  extra?: Record<string, unknown>;
}

const compiled = new Map<string, Template>();

/** Renders messages with the tokenizer's Jinja chat template (@huggingface/jinja). */
export function renderChat(
  tokenizer: Pick<Tokenizer, 'chatTemplate'>,
  messages: readonly Pick<ChatMessage, 'role' | 'content'>[] | readonly { role: string; content: string }[],
  options: RenderChatOptions = {},
): string {
  const source = tokenizer.chatTemplate;
  if (!source)
    throw new EngineError('TOKENIZER', 'this tokenizer has no chat template; pass one in its options');
  let template = compiled.get(source);
  if (!template) {
    try {
      template = new Template(source);
    } catch (err) {
      throw new EngineError('TOKENIZER', `the chat template does not parse: ${(err as Error).message}`, {
        cause: err,
      });
    }
    compiled.set(source, template);
  }
  return template.render({
    messages,
    add_generation_prompt: options.addGenerationPrompt ?? false,
    ...(options.tools ? { tools: options.tools } : {}),
    bos_token: '',
    eos_token: '',
    ...options.extra,
  });
}
