import type { EngineAdapter, GenerateRequest, GenerateResult } from '../../src/engine-adapter.js';
import type { RolloutTokenizer } from '../../src/tokenizer.js';

/**
 * A tiny deterministic engine for unit tests of the loop's parsing and masking: for each request it
 * "samples" the next scripted reply of that trajectory, token by token, honouring stop tokens, stop
 * strings and maxNewTokens like a real engine. Logprobs are a deterministic function of position.
 * It also checks the KV-cache contract: each turn's tokenIds must extend the previous turn's.
 */
export function createScriptedEngine(
  tokenizer: RolloutTokenizer,
  script: (cacheId: string, turn: number, tokenIds: readonly number[]) => string,
  options: { separateAb?: boolean } = {},
): EngineAdapter & { requests: GenerateRequest[]; released: string[] } {
  const turns = new Map<string, { turn: number; seen: number[] }>();
  const requests: GenerateRequest[] = [];
  const released: string[] = [];
  return {
    name: 'scripted',
    requests,
    released,
    async generate(req): Promise<GenerateResult> {
      requests.push({ ...req, tokenIds: [...req.tokenIds] });
      const state = turns.get(req.cacheId) ?? { turn: 0, seen: [] };
      for (let i = 0; i < state.seen.length; i++) {
        if (req.tokenIds[i] !== state.seen[i]) throw new Error(`turn ${state.turn}: history changed at ${i}`);
      }
      const text = script(req.cacheId, state.turn, req.tokenIds);
      // Sample "a" and "b" as two tokens where the tokenizer would merge them, as real models do.
      const abId = tokenizer.encode('ab');
      const planned = tokenizer
        .encode(text)
        .flatMap((id) =>
          options.separateAb && abId.length === 1 && id === abId[0]
            ? [...tokenizer.encode('a'), ...tokenizer.encode('b')]
            : [id],
        );
      const out: number[] = [];
      let finishReason: 'stop' | 'length' = 'length';
      for (const id of planned) {
        if (out.length >= req.params.maxNewTokens) break;
        out.push(id);
        const tail = tokenizer.decode(out);
        if (req.params.stopTokenIds.includes(id) || req.params.stopStrings.some((s) => tail.endsWith(s))) {
          finishReason = 'stop';
          break;
        }
      }
      if (out.length === planned.length && out.length < req.params.maxNewTokens) finishReason = 'stop';
      state.turn += 1;
      state.seen = [...req.tokenIds, ...out];
      turns.set(req.cacheId, state);
      return { tokenIds: out, logprobs: out.map((_, i) => -0.01 * (i + 1)), finishReason };
    },
    async release(cacheId) {
      released.push(cacheId);
      turns.delete(cacheId);
    },
    async load() {
      return { kvCapacityTokens: null, kvUsage: null, running: null, waiting: null };
    },
    async updateWeights() {},
    async close() {},
  };
}
