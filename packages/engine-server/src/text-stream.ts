import { firstStopString } from './stop.js';
import type { TextCodec } from './text.js';

export interface TextStreamOptions {
  skipSpecial: boolean;
  /** stop strings cut out of the text: their length − 1 is held back until the next token */
  stopStrings: readonly string[];
  includeStopStr: boolean;
}

/**
 * Incremental detokenisation for streaming, after vLLM's `IncrementalDetokenizer`
 * (`vllm/v1/engine/detokenizer.py`): each new token re-decodes the output so far and releases only
 * text no later token can change: never a trailing U+FFFD (a UTF-8 sequence cut mid-way), never the
 * last `max(len(stop)) − 1` characters while a stop string could still complete there
 * (`stop_buffer_length`). `finish`
 * releases the rest of the final text, so the pieces always join to the non-streamed text.
 */
export function createTextStream(codec: TextCodec, options: TextStreamOptions) {
  const ids: number[] = [];
  let sent = '';
  const stopHold = options.includeStopStr ? 0 : Math.max(0, ...options.stopStrings.map((s) => s.length - 1));
  return {
    /** Adds a token; returns the text now safe to send ('' when none). */
    push(token: number): string {
      ids.push(token);
      let text = codec.decode(ids, options.skipSpecial);
      while (text.endsWith('\uFFFD')) text = text.slice(0, -1);
      const stop = firstStopString(text, options.stopStrings);
      // A completed stop string ends the text here, as the final cut will (the token that
      // completed it is reported before the engine stops); otherwise hold back a possible start.
      if (stop) text = text.slice(0, stop.index + (options.includeStopStr ? stop.text.length : 0));
      else text = text.slice(0, Math.max(0, text.length - stopHold));
      if (text.length <= sent.length || !text.startsWith(sent)) return '';
      const delta = text.slice(sent.length);
      sent = text;
      return delta;
    },
    /** The rest of `finalText` past what was sent. */
    finish(finalText: string): string {
      const rest = finalText.startsWith(sent) ? finalText.slice(sent.length) : '';
      sent = finalText;
      return rest;
    },
    /** the text sent so far */
    get sent(): string {
      return sent;
    },
  };
}
