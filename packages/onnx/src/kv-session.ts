import type * as ort from 'onnxruntime-node';
import type { DecoderShape } from './export-decoder.js';

/** One trajectory's tokens and the `present.*` tensors of its decoder run, fed back as past. */
export interface KvCache {
  tokens: number[];
  past: Record<string, ort.Tensor>;
}

/** An empty KV cache: zero-length `past_key_values.{i}.key|value` for every layer. */
export function emptyKvCache(rt: typeof ort, shape: DecoderShape): KvCache {
  const past: Record<string, ort.Tensor> = {};
  for (let l = 0; l < shape.layers; l++) {
    for (const kind of ['key', 'value']) {
      past[`past_key_values.${l}.${kind}`] = new rt.Tensor('float32', new Float32Array(0), [
        1,
        shape.kvHeads,
        0,
        shape.headDim,
      ]);
    }
  }
  return { tokens: [], past };
}

/** Feeds `tokens` after what the cache holds; returns the logits of the last one. */
export async function extendKvCache(
  rt: typeof ort,
  session: ort.InferenceSession,
  shape: DecoderShape,
  cache: KvCache,
  tokens: number[],
): Promise<Float32Array> {
  const start = cache.tokens.length;
  const n = tokens.length;
  const out = await session.run({
    input_ids: new rt.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, n]),
    attention_mask: new rt.Tensor('int64', new BigInt64Array(start + n).fill(1n), [1, start + n]),
    position_ids: new rt.Tensor(
      'int64',
      BigInt64Array.from(tokens, (_, i) => BigInt(start + i)),
      [1, n],
    ),
    ...cache.past,
  });
  for (let l = 0; l < shape.layers; l++) {
    cache.past[`past_key_values.${l}.key`] = out[`present.${l}.key`]!;
    cache.past[`past_key_values.${l}.value`] = out[`present.${l}.value`]!;
  }
  cache.tokens.push(...tokens);
  const logits = out.logits!.data as Float32Array;
  return logits.subarray((n - 1) * shape.vocab, n * shape.vocab);
}
