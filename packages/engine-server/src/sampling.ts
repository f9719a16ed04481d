import type { SamplingParams } from '@agentrl/protocol';
import { EngineServerError } from './errors.js';

/** What one generation asks for, after vLLM / SGLang field names are mapped. */
export interface GenerationSpec {
  params: SamplingParams;
  /** stop strings as the client gave them (matched on the decoded text) */
  stopStrings: string[];
  /** stop_token_ids as the client gave them */
  stopTokenIds: number[];
  /** ids that end generation as EOS (the tokenizer's eos + generation_config); empty with ignore_eos */
  eosIds: number[];
}

export interface SpecInput {
  temperature?: number | null | undefined;
  topP?: number | null | undefined;
  topK?: number | null | undefined;
  maxNewTokens: number;
  stop?: string | string[] | null | undefined;
  stopTokenIds?: number[] | null | undefined;
  ignoreEos?: boolean | null | undefined;
  seed?: number | null | undefined;
  presencePenalty?: number | null | undefined;
  frequencyPenalty?: number | null | undefined;
}

/** vLLM's check (`SamplingParams._verify_args`): both penalties lie in [-2, 2]. */
function penalty(name: string, value: number | null | undefined): number {
  const v = value ?? 0;
  if (!(v >= -2 && v <= 2))
    throw new EngineServerError('INVALID_REQUEST', `${name} must be in [-2, 2], got ${value}.`);
  return v;
}

/** Maps the fields both APIs share onto the engine's SamplingParams; EOS ends a turn unless ignore_eos. */
export function generationSpec(input: SpecInput, eosIds: readonly number[]): GenerationSpec {
  const stopStrings = (typeof input.stop === 'string' ? [input.stop] : (input.stop ?? [])).filter(
    (s) => s.length > 0,
  );
  const stopTokenIds = [...(input.stopTokenIds ?? [])];
  const eos = input.ignoreEos ? [] : [...eosIds];
  const presencePenalty = penalty('presence_penalty', input.presencePenalty);
  const frequencyPenalty = penalty('frequency_penalty', input.frequencyPenalty);
  return {
    params: {
      temperature: input.temperature ?? 1,
      topP: input.topP ?? 1,
      // vLLM and SGLang spell "no top-k" as -1 (older vLLM: 0).
      topK: Math.max(0, input.topK ?? 0),
      maxNewTokens: Math.max(1, input.maxNewTokens),
      stopTokenIds: [...new Set([...stopTokenIds, ...eos])],
      stopStrings,
      ...(input.seed !== undefined && input.seed !== null ? { seed: input.seed } : {}),
      ...(presencePenalty !== 0 ? { presencePenalty } : {}),
      ...(frequencyPenalty !== 0 ? { frequencyPenalty } : {}),
    },
    stopStrings,
    stopTokenIds,
    eosIds: eos,
  };
}

/** The sampling fields vLLM's completion and chat requests share (`protocol.py`). */
export interface VllmSamplingFields {
  temperature?: number | null | undefined;
  top_p?: number | null | undefined;
  top_k?: number | null | undefined;
  stop?: string | string[] | null | undefined;
  stop_token_ids?: number[] | null | undefined;
  ignore_eos?: boolean | null | undefined;
  seed?: number | null | undefined;
  presence_penalty?: number | null | undefined;
  frequency_penalty?: number | null | undefined;
}

/** generationSpec of a vLLM request; sample `index` of `n` draws with seed + index. */
export function vllmGenerationSpec(
  body: VllmSamplingFields,
  maxNewTokens: number,
  index: number,
  eosIds: readonly number[],
): GenerationSpec {
  return generationSpec(
    {
      temperature: body.temperature,
      topP: body.top_p,
      topK: body.top_k,
      maxNewTokens,
      stop: body.stop,
      stopTokenIds: body.stop_token_ids,
      ignoreEos: body.ignore_eos,
      seed: body.seed === undefined || body.seed === null ? undefined : body.seed + index,
      presencePenalty: body.presence_penalty,
      frequencyPenalty: body.frequency_penalty,
    },
    eosIds,
  );
}

/** A standard field and the value that leaves sampling unchanged. */
type Neutral = [field: string, value: unknown, isNeutral: (v: unknown) => boolean, neutral: string];

const isNone = (v: unknown) => v === undefined || v === null;
const eq = (x: number) => (v: unknown) => isNone(v) || v === x;
const emptyObject = (v: unknown) =>
  isNone(v) || (typeof v === 'object' && Object.keys(v as object).length === 0);

/**
 * Standard sampling fields the engine does not implement are accepted at their neutral value (what
 * verl and rStar send by default) and refused otherwise, naming the field; silently ignoring a
 * repetition penalty would hand the client samples from a distribution it did not ask for.
 */
export function refuseNonNeutral(
  body: Record<string, unknown>,
  fields: readonly string[] = NEUTRAL_FIELDS,
): void {
  for (const [field, , isNeutral, neutral] of NEUTRALS) {
    if (!fields.includes(field)) continue;
    const value = body[field];
    if (!isNeutral(value))
      throw new EngineServerError(
        'UNSUPPORTED_FIELD',
        `${field}=${JSON.stringify(value)} is not implemented by the agentrl engine; send ${neutral} (its neutral value) or leave it out`,
      );
  }
}

const NEUTRALS: Neutral[] = [
  ['repetition_penalty', 1, eq(1), '1.0'],
  ['min_tokens', 0, eq(0), '0'],
  ['min_new_tokens', 0, eq(0), '0'],
  ['min_p', 0, eq(0), '0'],
  ['logit_bias', {}, emptyObject, '{}'],
  ['use_beam_search', false, (v) => isNone(v) || v === false, 'false'],
];
const NEUTRAL_FIELDS = NEUTRALS.map((n) => n[0]);
