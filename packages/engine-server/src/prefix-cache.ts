import type { EngineAdapter } from '@agentrl/rollout';

interface Entry {
  id: string;
  tokens: readonly number[];
  busy: boolean;
  used: number;
}

/**
 * Automatic prefix caching for the local server, as vLLM and SGLang do it: a request whose tokens
 * extend a finished request's sequence continues that sequence's KV cache in the engine, so a
 * trajectory's later turns prefill only their new tokens and come out exactly as in-process.
 */
export function createPrefixCache(engine: EngineAdapter, maxEntries = 256) {
  const entries: Entry[] = [];
  let counter = 0;
  let clock = 0;
  const drop = async (e: Entry) => {
    entries.splice(entries.indexOf(e), 1);
    await engine.release(e.id);
  };
  return {
    /** A cache id for `tokens`: the idle entry holding the longest prefix of them, or a new one. */
    async acquire(tokens: readonly number[]): Promise<Entry> {
      let best: Entry | undefined;
      for (const e of entries) {
        if (e.busy || e.tokens.length > tokens.length || (best && best.tokens.length >= e.tokens.length))
          continue;
        let same = true;
        for (let i = 0; i < e.tokens.length && same; i++) same = e.tokens[i] === tokens[i];
        if (same) best = e;
      }
      if (!best) {
        while (entries.length >= maxEntries) {
          const idle = entries.filter((e) => !e.busy).sort((a, b) => a.used - b.used)[0];
          if (!idle) break;
          await drop(idle);
        }
        best = { id: `prefix-${counter++}`, tokens: [], busy: false, used: 0 };
        entries.push(best);
      }
      best.busy = true;
      return best;
    },
    /** The request ended: the entry now holds `tokens` (or nothing, after a failure). */
    async done(entry: Entry, tokens: readonly number[] | null): Promise<void> {
      entry.busy = false;
      entry.used = clock++;
      if (tokens === null) await drop(entry);
      else entry.tokens = tokens;
    },
    /** Frees every idle entry (flush_cache, reset_prefix_cache). */
    async flush(): Promise<void> {
      for (const e of entries.filter((x) => !x.busy)) await drop(e);
    },
  };
}
