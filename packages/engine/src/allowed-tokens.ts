/**
 * Constrained decoding's logits step (as vLLM's structured-output bitmask, `apply_grammar_bitmask`):
 * every token outside `allowed` gets -Infinity, so the draw (greedy, top-k/top-p or full) can only
 * pick an allowed one. Returns a copy; an empty `allowed` set is the caller's bug and throws.
 */
export function restrictTokens(logits: Float32Array, allowed: ReadonlySet<number>): Float32Array {
  if (allowed.size === 0) throw new Error('restrictTokens: the constraint allows no token');
  const out = new Float32Array(logits.length).fill(Number.NEGATIVE_INFINITY);
  for (const t of allowed) if (t >= 0 && t < logits.length) out[t] = logits[t] ?? 0;
  return out;
}
