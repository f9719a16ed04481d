import type { SamplingParams } from '@agentrl/protocol';
import { temperedProbs } from './sampling.js';

type PenaltyParams = Pick<SamplingParams, 'presencePenalty' | 'frequencyPenalty'>;

/** Whether a request asks for presence or frequency penalties (0 or absent: none). */
export function hasPenalties(p: PenaltyParams): boolean {
  return (p.presencePenalty ?? 0) !== 0 || (p.frequencyPenalty ?? 0) !== 0;
}

/**
 * The logits the draw uses under OpenAI's presence and frequency penalties, as vLLM applies them
 * (`vllm/model_executor/layers/utils.py` `apply_penalties`, before temperature): every token the
 * request has generated so far (its output, not its prompt) loses `frequency × count` and, once
 * present, `presence`. `counts` holds this request's output tokens; the row is copied, not changed.
 */
export function applyPenalties(
  logits: Float32Array,
  counts: ReadonlyMap<number, number>,
  p: PenaltyParams,
): Float32Array {
  const out = Float32Array.from(logits);
  const presence = p.presencePenalty ?? 0;
  const frequency = p.frequencyPenalty ?? 0;
  for (const [token, count] of counts) out[token] = (out[token] ?? 0) - frequency * count - presence;
  return out;
}

let probsScratch = new Float64Array(0);

/**
 * log p(token) under softmax(logits / temperature) of the model's own logits, before penalties
 * (temperature 0: the untempered softmax), computed exactly as sampleToken computes its logprob.
 * A penalised draw records this, so a recorded logprob always means what the trainer recomputes
 * from the same weights; the penalties only move which token is drawn.
 */
export function modelLogprob(logits: Float32Array, temperature: number, token: number): number {
  if (probsScratch.length < logits.length) probsScratch = new Float64Array(logits.length);
  return temperedProbs(logits, temperature, probsScratch).logprobOf(token);
}
