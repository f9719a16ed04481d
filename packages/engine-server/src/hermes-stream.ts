import { type ParsedToolCalls, toolCallId } from './hermes.js';
import { createDumpsStream } from './json-dumps-stream.js';

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';
/** A Hermes call up to its name's closing quote, and up to where its arguments begin. */
const NAME = /^\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"/;
const ARGS = /^\s*\{\s*"name"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*"arguments"\s*:\s*/;

/** One piece of a streamed tool call, in the OpenAI `delta.tool_calls` shape. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export interface HermesDelta {
  content: string;
  toolCalls: ToolCallDelta[];
}

interface OpenCall {
  /** where the call's text starts (after `<tool_call>`) */
  start: number;
  name?: string;
  /** how far the call's text has been fed to `args` */
  fed: number;
  args?: ReturnType<typeof createDumpsStream>;
  /** the arguments streamed so far */
  sent: string;
  closed: boolean;
}

/**
 * Tool calls streamed as vLLM's Hermes parser streams them (`extract_tool_calls_streaming` in
 * `vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py`): text before `<tool_call>` leaves
 * as content (a trailing piece of the marker held back); once a call's name is read, a first delta
 * `{index, id, type: "function", function: {name, arguments: ""}}`; then the arguments as
 * `function.arguments` pieces while their tokens arrive. Where vLLM diffs partial-JSON parses,
 * the pieces here are the arguments rewritten as `json.dumps` writes them (json-dumps-stream.ts),
 * so they join to the non-streamed `arguments` string. Text after the first call is not content,
 * as in the non-streamed reply. `end` reconciles with the non-streamed parse of the final text:
 * the rest of the content and of each call's arguments, and a call whose head did not stream
 * (its name not first) whole.
 */
export function createHermesStream() {
  let text = '';
  let contentSent = 0;
  const calls: OpenCall[] = [];

  const content = (): string => {
    if (calls.length > 0) return '';
    const at = text.indexOf(OPEN);
    const safe = at >= 0 ? text.slice(0, at) : beforeMarker(text, OPEN);
    const out = safe.slice(contentSent);
    contentSent = safe.length;
    if (at >= 0) calls.push({ start: at + OPEN.length, fed: 0, sent: '', closed: false });
    return out;
  };

  /** Advances the open call; returns its deltas, and opens the next call once this one closed. */
  const advance = (call: OpenCall, index: number, out: ToolCallDelta[]): void => {
    const body = text.slice(call.start);
    const end = body.indexOf(CLOSE);
    const region = end >= 0 ? body.slice(0, end) : body;
    if (call.name === undefined) {
      const m = NAME.exec(region);
      const name = m ? readName(m[1]!) : undefined;
      if (name !== undefined) {
        call.name = name;
        out.push({ index, id: toolCallId(), type: 'function', function: { name, arguments: '' } });
      }
    }
    if (call.name !== undefined && !call.args) {
      const m = ARGS.exec(region);
      if (m) {
        call.args = createDumpsStream();
        call.fed = m[0].length;
      }
    }
    if (call.args) {
      const piece = call.args.push(region.slice(call.fed));
      call.fed = region.length;
      if (piece) {
        call.sent += piece;
        out.push({ index, function: { arguments: piece } });
      }
    }
    if (end < 0) return;
    call.closed = true;
    const next = text.indexOf(OPEN, call.start + end + CLOSE.length);
    if (next >= 0) calls.push({ start: next + OPEN.length, fed: 0, sent: '', closed: false });
  };

  return {
    /** Reads more of the output text; returns the content and tool-call deltas it releases. */
    push(delta: string): HermesDelta {
      text += delta;
      const out: HermesDelta = { content: content(), toolCalls: [] };
      for (let i = 0; i < calls.length; i++) if (!calls[i]!.closed) advance(calls[i]!, i, out.toolCalls);
      return out;
    },
    /**
     * What is left once the output is final: `parsed` is the non-streamed parse of the whole text
     * (`finalText`, what `push` was fed). Content past what left; each call's arguments past what
     * left (nothing when they diverged, e.g. a repeated key); calls that never streamed, whole.
     */
    end(parsed: ParsedToolCalls, finalText: string): HermesDelta {
      return remainder(parsed, finalText, text.slice(0, contentSent), calls);
    },
  };
}

/** `end`'s answer: what the non-streamed parse holds past what the stream sent (`sent` content, `calls`). */
function remainder(
  parsed: ParsedToolCalls,
  finalText: string,
  sent: string,
  calls: readonly OpenCall[],
): HermesDelta {
  const fullContent = parsed.toolCalls.length > 0 ? (parsed.content ?? '') : finalText;
  const out: HermesDelta = {
    content: fullContent.startsWith(sent) ? fullContent.slice(sent.length) : '',
    toolCalls: [],
  };
  parsed.toolCalls.forEach((c, index) => {
    const call = calls[index];
    if (call?.name === undefined) out.toolCalls.push({ index, ...c });
    else if (c.function.arguments.startsWith(call.sent) && c.function.arguments.length > call.sent.length)
      out.toolCalls.push({
        index,
        function: { arguments: c.function.arguments.slice(call.sent.length) },
      });
  });
  return out;
}

function readName(raw: string): string | undefined {
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return undefined;
  }
}

/** `text` cut before `marker`, or before a trailing prefix of it that a later token could complete. */
function beforeMarker(text: string, marker: string): string {
  const at = text.indexOf(marker);
  if (at >= 0) return text.slice(0, at);
  for (let k = Math.min(marker.length - 1, text.length); k > 0; k--)
    if (text.endsWith(marker.slice(0, k))) return text.slice(0, text.length - k);
  return text;
}
