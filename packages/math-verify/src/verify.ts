import { type Answer, extractFrom, goldAnswer } from './answer.js';
import { casEqual } from './cas.js';
import { answersEqual } from './compare/compare.js';
import { DEFAULT_VERIFY_OPTIONS, resolveOptions, type VerifyOptions } from './config.js';
import { Deadline, DeadlineExceeded } from './deadline.js';
import { canonicalOfNormal, normalizeAnswer } from './latex/normalize.js';
import { LIMITS } from './limits.js';
import { warmUpOnce } from './warm-up.js';

/**
 * Why a verdict came out as it did:
 * - `equal`: the parsed answers are mathematically equal
 * - `string-match`: the normalised strings are identical
 * - `cas-equal`: compute-engine found them equal where our parser could not read one side
 * - `not-equal`: both read, not equal
 * - `no-answer`: the response holds no answer we could find
 * - `gold-unreadable`: no answer could be read from the gold
 * - `timeout`: the budget ran out (counted as wrong)
 * - `internal-error`: a bug in the verifier (counted as wrong; never thrown)
 */
export type VerifyReason =
  | 'equal'
  | 'string-match'
  | 'cas-equal'
  | 'not-equal'
  | 'no-answer'
  | 'gold-unreadable'
  | 'timeout'
  | 'internal-error';

export interface VerifyResult {
  correct: boolean;
  /** The answer taken from the response, as written (null when none was found). */
  extracted: string | null;
  reason: VerifyReason;
}

/** Same answer text after normalisation (reused from parsing when done there); over-long answers as written. */
function sameText(a: Answer, b: Answer): boolean {
  if (a.raw.length > LIMITS.maxAnswerChars || b.raw.length > LIMITS.maxAnswerChars)
    return a.raw.trim() === b.raw.trim();
  return canonicalOf(a) === canonicalOf(b);
}

function canonicalOf(x: Answer): string {
  return canonicalOfNormal(x.normal ?? normalizeAnswer(x.raw));
}

/**
 * Is the final answer of `response` mathematically equal to `gold`? Never throws and never runs
 * much past `timeoutMs` (see README, "Time budget"): a reward of 1 for `correct`, 0 otherwise.
 */
export function verify(gold: string, response: string, opts?: Partial<VerifyOptions>): VerifyResult {
  const o = resolveOptions(opts);
  warmUpOnce(warmCall); // first call only, before this call's budget starts
  const deadline = new Deadline(o.timeoutMs);
  let pred: Answer | null = null;
  try {
    if (typeof gold !== 'string' || typeof response !== 'string')
      return { correct: false, extracted: null, reason: 'internal-error' };
    pred = extractFrom(response, deadline);
    if (!pred) return { correct: false, extracted: null, reason: 'no-answer' };
    const g = goldAnswer(gold, deadline, o.goldIsAnswer);
    if (!g) return { correct: false, extracted: pred.shown ?? pred.raw, reason: 'gold-unreadable' };
    if (sameText(g, pred))
      return { correct: true, extracted: pred.shown ?? pred.raw, reason: 'string-match' };
    if (g.node && pred.node) {
      const co = { deadline, allowSetRelation: o.allowSetRelation, floatRounding: o.floatRounding };
      const same =
        answersEqual(g.node, pred.node, co) ||
        (g.alternative !== undefined && answersEqual(g.alternative, pred.node, co));
      return { correct: same, extracted: pred.shown ?? pred.raw, reason: same ? 'equal' : 'not-equal' };
    }
    if (o.casFallback && casEqual(g.raw, pred.raw, deadline) === true)
      return { correct: true, extracted: pred.shown ?? pred.raw, reason: 'cas-equal' };
    return { correct: false, extracted: pred.shown ?? pred.raw, reason: 'not-equal' };
  } catch (e) {
    const reason = e instanceof DeadlineExceeded ? 'timeout' : 'internal-error';
    return { correct: false, extracted: pred ? (pred.shown ?? pred.raw) : null, reason };
  }
}

const WARM_UP_OPTIONS: Partial<VerifyOptions> = { timeoutMs: 1_000 };
const warmCall = (gold: string, response: string) => verify(gold, response, WARM_UP_OPTIONS);

/** `verify` over many pairs; each pair gets its own budget. */
export function verifyBatch(
  items: readonly { gold: string; response: string }[],
  opts?: Partial<VerifyOptions>,
): VerifyResult[] {
  return items.map((it) => verify(it.gold, it.response, opts));
}

/** The final answer of a response as written, or null (no comparison, same extraction as verify). */
export function extractAnswer(
  response: string,
  opts?: Pick<Partial<VerifyOptions>, 'timeoutMs'>,
): string | null {
  warmUpOnce(warmCall);
  const deadline = new Deadline(opts?.timeoutMs ?? DEFAULT_VERIFY_OPTIONS.timeoutMs);
  try {
    const a = extractFrom(response, deadline);
    return a ? (a.shown ?? a.raw) : null;
  } catch {
    return null;
  }
}
