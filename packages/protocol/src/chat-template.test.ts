import { describe, expect, it } from 'vitest';
import {
  CHATML_TEMPLATE,
  CHATML_TOOLS_TEMPLATE,
  ProtocolError,
  renderChat,
  selectChatTemplate,
} from './chat-template.js';

const messages = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'What is 2 + 2?' },
];

describe('renderChat', () => {
  it('renders ChatML turns and the generation prompt', () => {
    expect(renderChat({ chatTemplate: CHATML_TEMPLATE }, messages, { addGenerationPrompt: true })).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('puts the tool list into the system turn, after the system prompt', () => {
    const tool = { type: 'function', function: { name: 'python', parameters: {} } };
    const text = renderChat({ chatTemplate: CHATML_TOOLS_TEMPLATE }, messages, { tools: [tool] });
    expect(text.startsWith('<|im_start|>system\nBe brief.\n\n# Tools\n')).toBe(true);
    expect(text).toContain('{"type": "function", "function": {"name": "python", "parameters": {}}}');
    expect(text.match(/<\|im_start\|>system/g)).toHaveLength(1);
  });

  it('picks tool_use when tools are given, as transformers does', () => {
    const source = { chatTemplate: 'plain', chatTemplates: { default: 'plain', tool_use: 'tools' } };
    expect(selectChatTemplate(source, true)).toBe('tools');
    expect(selectChatTemplate(source, false)).toBe('plain');
  });

  it('fails with PROTOCOL_CHAT_TEMPLATE and the reason', () => {
    expect(() => selectChatTemplate({}, false)).toThrow(/no chat template; add chat_template/);
    let err: unknown;
    try {
      renderChat({ chatTemplate: '{% for %}' }, messages);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).code).toBe('PROTOCOL_CHAT_TEMPLATE');
    expect((err as Error).message).toMatch(/does not parse/);
  });
});
