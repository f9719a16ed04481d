import { describe, expect, it } from 'vitest';
import { createChatFormat, wrapToolResponse } from './chat-format.js';

describe('createChatFormat (ChatML)', () => {
  const fmt = createChatFormat();

  it('renders a prompt ending in the generation prompt', () => {
    const text = fmt.renderPrompt([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'What is 2+2?' },
    ]);
    expect(text).toBe(
      '<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('closes the turn, appends the response as a user turn and reopens the assistant', () => {
    const r = wrapToolResponse('4');
    expect(fmt.toolResponseSegment('<tool_call>{}</tool_call>', r)).toBe(
      '<|im_end|>\n<|im_start|>user\n<tool_response>\n4\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
    // The model sampled <|im_end|> itself: it is not written twice.
    expect(fmt.toolResponseSegment('<tool_call>{}</tool_call><|im_end|>', r)).toBe(
      '\n<|im_start|>user\n<tool_response>\n4\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('matches a full re-render of the conversation (the segment is what the template would write)', () => {
    const messages = [{ role: 'user' as const, content: 'q?' }];
    const assistant = 'Try.<tool_call>{"name":"p","arguments":{}}</tool_call>';
    const prompt = fmt.renderPrompt(messages);
    const segment = fmt.toolResponseSegment(assistant, wrapToolResponse('out'));
    const full = fmt.renderPrompt([
      ...messages,
      { role: 'assistant', content: assistant },
      { role: 'user', content: wrapToolResponse('out') },
    ]);
    expect(prompt + assistant + segment).toBe(full);
  });

  it('lists tools in the system prompt when given', () => {
    const withTools = createChatFormat({
      tools: [{ type: 'function', function: { name: 'python', description: 'd', parameters: {} } }],
    });
    expect(withTools.renderPrompt([{ role: 'user', content: 'hi' }])).toContain('"name": "python"');
  });
});
