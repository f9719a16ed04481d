// llama.cpp beside the engine, through node-llama-cpp installed OUTSIDE this workspace (it is not a
// dependency): AGENTRL_LLAMA_CPP names the folder it was installed in (`npm i node-llama-cpp` there)
// or the node-llama-cpp package folder itself. Only the prebuilt CPU binary is used (gpu: false,
// build: 'never'); weights are read into memory (no mmap), the KV cache is fp32 and flash attention
// is off, so both sides do fp32 arithmetic throughout.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const now = () => performance.now() / 1000;

// The slice of node-llama-cpp's API used here (its types are not a dependency either).
type EvalItem = number | [number, { generateNext: { token?: boolean; logits?: boolean; options?: object } }];
interface Sequence {
  controlledEvaluate(
    items: EvalItem[],
  ): Promise<Array<undefined | { next?: { token?: number; logits?: Map<number, number> } }>>;
  clearHistory(): Promise<void>;
  dispose(): void;
}
interface Context {
  getSequence(): Sequence;
  dispose(): Promise<void>;
}
interface LlamaModel {
  createContext(options: object): Promise<Context>;
  dispose(): Promise<void>;
}
interface Llama {
  loadModel(options: object): Promise<LlamaModel>;
  dispose(): Promise<void>;
}

/** The settings llama.cpp runs with on its side, printed and recorded beside its figures. */
export const LLAMA_CPP_SETTINGS = {
  threads: 2,
  gpu: false,
  useMmap: false,
  kvCacheType: 'F32',
  // Off: llama.cpp's CPU flash attention rounds through fp16 (logits then differ by ~1e-3, not 1e-6).
  flashAttention: false,
  batchSize: 512,
} as const;

export interface LlamaCppRun {
  decodeTokensPerS: number;
  /** CPU time of the whole process per decode step (all threads, spinning included). */
  decodeCpuMsPerStep: number;
  prefillTokensPerS: number;
}

export interface LlamaCpp {
  /** Raw logits [V] after `tokens`, on a fresh sequence. */
  logits(tokens: readonly number[]): Promise<Float32Array>;
  /**
   * Prefill `batch` prompts of 32 tokens, then `newTokens` greedy tokens each, all sequences per
   * step, on `threads` threads (default LLAMA_CPP_SETTINGS.threads).
   */
  decode(batch: number, newTokens: number, vocab: number, threads?: number): Promise<LlamaCppRun>;
  dispose(): Promise<void>;
}

/** The node-llama-cpp entry under `dir` (peer folder or the package itself), or undefined. */
export function llamaCppEntry(dir: string | undefined): string | undefined {
  if (!dir) return undefined;
  return [join(dir, 'node_modules/node-llama-cpp/dist/index.js'), join(dir, 'dist/index.js')].find((p) =>
    existsSync(p),
  );
}

/** Raw logits after `tokens` on a fresh sequence of `ctx`. */
async function logitsAfter(ctx: Context, tokens: readonly number[]): Promise<Float32Array> {
  const seq = ctx.getSequence();
  try {
    const items: EvalItem[] = tokens.map((t, i) =>
      i === tokens.length - 1 ? [t, { generateNext: { logits: true } }] : t,
    );
    const out = await seq.controlledEvaluate(items);
    const map = out[tokens.length - 1]?.next?.logits;
    if (!map) throw new Error('llama.cpp returned no logits');
    const row = new Float32Array(map.size);
    for (const [tok, v] of map) row[tok] = v;
    return row;
  } finally {
    seq.dispose();
  }
}

/** The bench's prompts (as decode-run.ts builds them), prefill, then greedy steps of all sequences at once. */
async function decodeOn(ctx: Context, batch: number, newTokens: number, vocab: number): Promise<LlamaCppRun> {
  const seqs = Array.from({ length: batch }, () => ctx.getSequence());
  try {
    const greedy = { generateNext: { token: true, options: { temperature: 0 } } };
    const prompts = seqs.map((_, i) => Array.from({ length: 32 }, (_, t) => (i * 31 + t * 3) % vocab));
    let t0 = now();
    const first = await Promise.all(
      seqs.map((q, i) =>
        q.controlledEvaluate((prompts[i] ?? []).map((t, j) => (j === 31 ? [t, greedy] : t))),
      ),
    );
    const prefill = now() - t0;
    let next = first.map((o) => o[31]?.next?.token ?? 0);
    t0 = now();
    const cpu0 = process.cpuUsage();
    for (let step = 0; step < newTokens; step++) {
      // Evaluated in the same event-loop tick: node-llama-cpp batches them into one llama_decode.
      const outs = await Promise.all(seqs.map((q, i) => q.controlledEvaluate([[next[i] ?? 0, greedy]])));
      next = outs.map((o) => o[0]?.next?.token ?? 0);
    }
    const decode = now() - t0;
    const cpu = process.cpuUsage(cpu0);
    return {
      decodeTokensPerS: (batch * newTokens) / decode,
      decodeCpuMsPerStep: (cpu.user + cpu.system) / 1000 / newTokens,
      prefillTokensPerS: (32 * batch) / prefill,
    };
  } finally {
    for (const q of seqs) q.dispose();
  }
}

/**
 * Loads `gguf` into llama.cpp (node-llama-cpp from AGENTRL_LLAMA_CPP), or returns null with the
 * reason when the variable is unset or names no install. A binary that fails to load throws.
 */
export async function openLlamaCpp(
  gguf: string,
  dir = process.env.AGENTRL_LLAMA_CPP,
): Promise<{ llama: LlamaCpp; version: string } | { llama: null; reason: string }> {
  const entry = llamaCppEntry(dir);
  if (!entry) {
    return {
      llama: null,
      reason: dir
        ? `AGENTRL_LLAMA_CPP=${dir} holds no node-llama-cpp (run npm i node-llama-cpp there)`
        : 'AGENTRL_LLAMA_CPP is unset (a folder where node-llama-cpp is installed)',
    };
  }
  const mod = (await import(pathToFileURL(entry).href)) as {
    getLlama(o: object): Promise<Llama & { llamaCppRelease?: { release: string } }>;
  };
  const s = LLAMA_CPP_SETTINGS;
  const lib = await mod.getLlama({
    gpu: false,
    build: 'never',
    logLevel: 'error',
    maxThreads: s.threads,
    progressLogs: false,
  });
  const model = await lib.loadModel({ modelPath: gguf, gpuLayers: 0, useMmap: s.useMmap, useMlock: false });
  const contexts = new Map<string, Context>();
  const context = async (sequences: number, threads: number = s.threads) => {
    const key = `${sequences}/${threads}`;
    let ctx = contexts.get(key);
    if (!ctx) {
      ctx = await model.createContext({
        sequences,
        contextSize: 256,
        batchSize: s.batchSize,
        threads: { ideal: threads, min: threads },
        flashAttention: s.flashAttention,
        experimentalKvCacheKeyType: s.kvCacheType,
        experimentalKvCacheValueType: s.kvCacheType,
      });
      contexts.set(key, ctx);
    }
    return ctx;
  };
  const llama: LlamaCpp = {
    logits: async (tokens) => logitsAfter(await context(1), tokens),
    decode: async (batch, newTokens, vocab, threads) =>
      decodeOn(await context(batch, threads), batch, newTokens, vocab),
    async dispose() {
      for (const c of contexts.values()) await c.dispose();
      await model.dispose();
      await lib.dispose();
    },
  };
  return { llama, version: lib.llamaCppRelease?.release ?? 'unknown' };
}
