import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCharTokenizer } from '@agentrl/engine';
import { CHATML_TEMPLATE, createChatFormat } from '@agentrl/rollout';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../config/load.js';
import { tokenizeDemo } from '../train/sft.js';
import { loadSftSource } from '../train/sft-source.js';
import { buildSftDemos } from './sft-data.js';
import { loadSftTranscripts } from './sft-files.js';

const tmp = mkdtempSync(join(tmpdir(), 'agentrl-sft-files-'));
const jsonl = (name: string, rows: unknown[]) => {
  const file = join(tmp, name);
  writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n'));
  return file;
};

const toolTranscript = {
  messages: [
    { role: 'user', content: 'What is the 10th prime?' },
    {
      role: 'assistant',
      content: 'Let me count.',
      tool_calls: [
        {
          type: 'function',
          function: {
            name: 'python',
            arguments: '{"code": "print([p for p in range(2,40) if all(p%d for d in range(2,p))][9])"}',
          },
        },
      ],
    },
    { role: 'tool', content: '29' },
    { role: 'assistant', content: 'The answer is \\boxed{29}.' },
  ],
};

describe('SFT transcripts (sft.files)', () => {
  it('reads messages rows with tool calls and tool turns, and trains only on the assistant turns', async () => {
    const file = jsonl('t.jsonl', [
      toolTranscript,
      {
        messages: [
          { role: 'system', content: 'S' },
          { role: 'user', content: 'Hi?' },
          { role: 'assistant', content: 'Hello.' },
        ],
      },
      {
        messages: [
          { role: 'user', content: 'a' },
          { role: 'user', content: 'b' },
          { role: 'assistant', content: 'c' },
        ],
      },
      {
        messages: [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: 'no call' },
          { role: 'tool', content: '1' },
          { role: 'assistant', content: 'x' },
        ],
      },
      { messages: [{ role: 'user', content: 'a' }] },
      { question: 'not a transcript' },
    ]);
    const got = await loadSftTranscripts([file], { systemPrompt: 'SYS' });
    expect(got.demos).toHaveLength(2);
    expect(got.skipped.map((s) => [s.row, s.reason])).toEqual([
      [
        2,
        expect.stringMatching(
          /message 1 is user; after the user problem, assistant turns and tool results alternate/,
        ),
      ],
      [3, expect.stringMatching(/without a <tool_call>/)],
      [4, expect.stringMatching(/must end with an assistant turn/)],
      [5, expect.stringMatching(/no messages list/)],
    ]);
    const [withTool, plain] = got.demos;
    expect(withTool!.messages.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
    expect(withTool!.messages[0]!.content).toBe('SYS');
    expect(withTool!.messages[2]!.content).toMatch(
      /^Let me count\.\n<tool_call>\n\{"name":"python","arguments":\{"code":"print/,
    );
    expect(withTool!.messages[3]!.content).toBe('<tool_response>\n29\n</tool_response>');
    expect(plain!.messages[0]!.content).toBe('S');

    const tok = createCharTokenizer();
    const chat = createChatFormat({ template: CHATML_TEMPLATE });
    const seq = tokenizeDemo(withTool!, chat, tok);
    const trained = tok.decode(seq.tokenIds.filter((_, i) => seq.lossMask[i] === 1));
    const masked = tok.decode(seq.tokenIds.filter((_, i) => seq.lossMask[i] === 0));
    expect(trained).toContain('Let me count.');
    expect(trained).toContain('The answer is \\boxed{29}.<|im_end|>');
    expect(trained).not.toContain('What is the 10th prime?');
    expect(trained).not.toContain('<tool_response>');
    expect(masked).toContain('<tool_response>\n29\n</tool_response>');
    // The token layout is the agent loop's: prompt, then turns and tool segments appended.
    const expected =
      chat.renderPrompt(withTool!.messages.slice(0, 2)) +
      withTool!.messages[2]!.content +
      chat.toolResponseSegment(withTool!.messages[2]!.content, withTool!.messages[3]!.content) +
      withTool!.messages[4]!.content +
      chat.endOfTurn;
    expect(tok.decode(seq.tokenIds)).toBe(expected);
  });

  it('real data without transcripts stops before the run instead of training bare \\boxed{} answers', async () => {
    const train = [{ id: 'a', question: 'Find the area of a unit circle.', answer: '\\pi' }];
    const noop = async () => ({ status: 'ok' as const, stdout: '', stderr: '', exitCode: 0, wallMs: 0 });
    expect(
      await buildSftDemos(train, {
        seed: 1,
        examples: 4,
        mix: { tool: 1, noTool: 1, toolErrorFixed: 0 },
        systemPrompt: null,
        runTool: noop as never,
        renderToolResponse: () => '',
      }),
    ).toEqual([]);
    const cfg = resolveConfig({ overrides: { task: { kind: 'files', trainFiles: ['x.jsonl'] } } });
    await expect(loadSftSource(cfg, train, () => {})).rejects.toThrow(
      /not multiplication problems.*sft\.files.*--sft\.enabled false/,
    );
    const off = resolveConfig({
      overrides: { task: { kind: 'files', trainFiles: ['x.jsonl'] }, sft: { enabled: false } },
    });
    expect(await loadSftSource(off, train, () => {})).toBeNull();
    const file = jsonl('one.jsonl', [toolTranscript]);
    const withFiles = resolveConfig({
      overrides: { task: { kind: 'files', trainFiles: ['x.jsonl'] }, sft: { files: [file] } },
    });
    expect(await loadSftSource(withFiles, train, () => {})).toHaveLength(1);
  });
});
