import * as engine from '@agentrl/engine';
import { createCharTokenizer, renderChat } from '@agentrl/engine';
import { describe, expect, it } from 'vitest';
import { createChatFormat, wrapToolResponse } from '../src/chat-format.js';
import * as rollout from '../src/index.js';

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

describe('one ChatML, in @agentrl/engine', () => {
  const conversations = [
    [{ role: 'user', content: 'What is 6*7?' }],
    [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What is\n6*7?' },
      { role: 'assistant', content: '<tool_call>{"name": "python"}</tool_call>' },
      { role: 'user', content: wrapToolResponse('42') },
    ],
    [{ role: 'system', content: 'only a system turn' }],
  ];
  const tools = [{ type: 'function', function: { name: 'python', parameters: { type: 'object' } } }];

  it('is what @agentrl/rollout exports under the same names', () => {
    expect(rollout.CHATML_TEMPLATE).toBe(engine.CHATML_TEMPLATE);
    expect(rollout.CHATML_TOOLS_TEMPLATE).toBe(engine.CHATML_TOOLS_TEMPLATE);
    expect(createCharTokenizer().chatTemplate).toBe(engine.CHATML_TEMPLATE);
  });

  it.each(conversations)('renders the same turns with and without the tool layout (%#)', (...messages) => {
    for (const addGenerationPrompt of [true, false]) {
      const plain = renderChat({ chatTemplate: engine.CHATML_TEMPLATE }, messages, { addGenerationPrompt });
      const withTools = renderChat({ chatTemplate: engine.CHATML_TOOLS_TEMPLATE }, messages, {
        addGenerationPrompt,
      });
      expect(withTools).toBe(plain);
      // The plain layout never lists tools (char-level models pay for every prompt character).
      expect(
        renderChat({ chatTemplate: engine.CHATML_TEMPLATE }, messages, { addGenerationPrompt, tools }),
      ).toBe(plain);
    }
  });

  it('lists the tools in the system turn only in the tool layout, as Qwen2.5 does', () => {
    const [system, user] = conversations[1]!;
    const text = renderChat({ chatTemplate: engine.CHATML_TOOLS_TEMPLATE }, [system!, user!], { tools });
    expect(text).toBe(
      '<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
        // trim_blocks (as transformers renders) eats the newlines after the for tags.
        'You are provided with function signatures within <tools></tools> XML tags:\n<tools>' +
        '{"type": "function", "function": {"name": "python", "parameters": {"type": "object"}}}</tools>\n\n' +
        'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\nWhat is\n6*7?<|im_end|>\n',
    );
  });
});
