import { createCharTokenizer, renderChat } from '@agentrl/engine';
import { describe, expect, it } from 'vitest';
import { createChatFormat, wrapToolResponse } from '../src/chat-format.js';

const QWEN25_LIKE = `{%- for message in messages %}{%- if message.role == 'user' or message.role == 'system' %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- elif message.role == 'assistant' %}{{- '<|im_start|>assistant\\n' + message.content + '<|im_end|>\\n' }}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}`;

describe("chat format from the model tokenizer's own Jinja template", () => {
  const tokenizer = createCharTokenizer();

  it.each([
    ['the engine tokenizer template', tokenizer.chatTemplate],
    ['a Qwen2.5-style template', QWEN25_LIKE],
  ])(
    'with %s, prompt + sampled turn + appended segment equals the full render, token for token',
    (_, template) => {
      const fmt = createChatFormat({ template });
      const messages = [{ role: 'user' as const, content: 'What is 6*7?' }];
      const assistant = '<tool_call>{"name":"python","arguments":{"code":"print(6*7)"}}</tool_call>';
      const prompt = fmt.renderPrompt(messages);
      expect(prompt).toBe(renderChat({ chatTemplate: template }, messages, { addGenerationPrompt: true }));
      const segment = fmt.toolResponseSegment(assistant, wrapToolResponse('42'));
      const full = renderChat(
        { chatTemplate: template },
        [
          ...messages,
          { role: 'assistant', content: assistant },
          { role: 'user', content: wrapToolResponse('42') },
        ],
        { addGenerationPrompt: true },
      );
      expect(prompt + assistant + segment).toBe(full);
      // Encoding the pieces separately gives the tokens of the whole: no drift at the seams.
      expect([
        ...tokenizer.encode(prompt),
        ...tokenizer.encode(assistant),
        ...tokenizer.encode(segment),
      ]).toEqual(tokenizer.encode(full));
    },
  );

  it('refuses a template that does not render contents verbatim', () => {
    expect(() =>
      createChatFormat({ template: '{% for m in messages %}{{ m.content | upper }}{% endfor %}' }),
    ).toThrow(/verbatim/);
  });
});
