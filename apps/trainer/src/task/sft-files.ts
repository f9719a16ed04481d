import type { ChatMessage } from '@agentrl/protocol';
import { TOOL_CALL_OPEN, wrapToolResponse } from '@agentrl/rollout';
import { readRows } from '../data/dataset.js';
import { TrainerError } from '../errors.js';
import { DEFAULT_SYSTEM_PROMPT } from './chat-format.js';
import type { SftDemo } from './sft-data.js';

export interface LoadedTranscripts {
  demos: SftDemo[];
  skipped: { file: string; row: number; reason: string }[];
}

/**
 * Reads SFT transcripts in the messages format (one `{"messages": [...]}` per jsonl line or
 * parquet row): an optional system message, the user's problem, then assistant turns, each one
 * that calls the tool followed by its `tool` message (or a user turn holding `<tool_response>`),
 * ending with an assistant turn: the layout the agent loop produces, so SFT trains on what RL
 * samples. Assistant `tool_calls` (OpenAI / HF shape) are written as Hermes `<tool_call>` text, as
 * Qwen's templates write them. A transcript without a system message gets the run's system
 * prompt. Rows that do not fit the layout are skipped and counted.
 */
export async function loadSftTranscripts(
  files: readonly string[],
  opts: { systemPrompt: string | null },
): Promise<LoadedTranscripts> {
  const out: LoadedTranscripts = { demos: [], skipped: [] };
  for (const file of files) {
    const rows = await readRows(file);
    rows.forEach((row, i) => {
      const parsed = transcriptOf(row, opts.systemPrompt ?? DEFAULT_SYSTEM_PROMPT);
      if (typeof parsed === 'string') out.skipped.push({ file, row: i, reason: parsed });
      else out.demos.push({ problemId: `${file}#${i}`, kind: 'transcript', messages: parsed });
    });
  }
  if (out.demos.length === 0) {
    const first = out.skipped[0];
    throw new TrainerError(
      'DATASET',
      `sft.files: no usable transcripts in ${files.join(', ')}${first ? ` (first skip: ${first.file} row ${first.row}: ${first.reason})` : ''}; rows need {"messages": [system?, user, assistant, (tool, assistant)...]}`,
    );
  }
  return out;
}

/** One row → the demo's messages (tool results as wrapped user turns), or why it was skipped. */
export function transcriptOf(row: unknown, systemPrompt: string): ChatMessage[] | string {
  const r = row as { messages?: unknown; __invalid?: unknown } | null;
  if (typeof r?.__invalid === 'string') return r.__invalid;
  let raw = r?.messages;
  // parquet stores a list column as a JSON string when it was written that way
  if (typeof raw === 'string') {
    try {
      raw = JSON.parse(raw);
    } catch {
      return 'messages is a string that is not JSON';
    }
  }
  if (!Array.isArray(raw) || raw.length === 0) return 'no messages list';
  const msgs: ChatMessage[] = [];
  for (const [k, m] of raw.entries()) {
    const one = messageOf(m);
    if (typeof one === 'string') return `message ${k}: ${one}`;
    msgs.push(one);
  }
  const body = msgs[0]!.role === 'system' ? msgs.slice(1) : msgs;
  const system = msgs[0]!.role === 'system' ? msgs[0]! : { role: 'system' as const, content: systemPrompt };
  if (body[0]?.role !== 'user') return 'the first message after the system message must be the user problem';
  for (let k = 1; k < body.length; k++) {
    const m = body[k]!;
    const prev = body[k - 1]!;
    const expected = k % 2 === 1 ? 'assistant' : 'user';
    if (m.role !== expected)
      return `message ${k} is ${m.role}; after the user problem, assistant turns and tool results alternate`;
    if (m.role === 'user') {
      if (!m.content.startsWith('<tool_response>'))
        return `message ${k}: a second user turn is not a tool result`;
      if (!prev.content.includes(TOOL_CALL_OPEN))
        return `message ${k}: a tool result follows an assistant turn without a <tool_call>`;
    }
  }
  if (body.at(-1)?.role !== 'assistant') return 'the transcript must end with an assistant turn';
  return [system, ...body];
}

function messageOf(m: unknown): ChatMessage | string {
  if (typeof m !== 'object' || m === null) return 'not an object';
  const { role, content, tool_calls } = m as { role?: unknown; content?: unknown; tool_calls?: unknown };
  const text = typeof content === 'string' ? content : content == null ? '' : null;
  if (text === null) return 'content must be a string';
  switch (role) {
    case 'system':
    case 'user':
      return { role, content: text };
    case 'tool':
      return { role: 'user', content: wrapToolResponse(text) };
    case 'assistant': {
      const calls = Array.isArray(tool_calls) ? tool_calls.map(toolCallOf) : [];
      const bad = calls.find((c) => c === null);
      if (bad === null) return 'a tool_calls entry needs function.name and function.arguments';
      const all = [text, ...(calls as string[])].filter((s) => s !== '').join('\n');
      return all === '' ? 'an assistant turn with no content and no tool_calls' : { role, content: all };
    }
    default:
      return `unknown role ${JSON.stringify(role)} (system, user, assistant, tool)`;
  }
}

/** An OpenAI/HF tool call as the Hermes text Qwen's chat templates render it. */
function toolCallOf(c: unknown): string | null {
  const f = (c as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
  if (!f || typeof f.name !== 'string') return null;
  let args = f.arguments;
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      return null;
    }
  }
  if (typeof args !== 'object' || args === null) return null;
  return `<tool_call>\n${JSON.stringify({ name: f.name, arguments: args })}\n</tool_call>`;
}
