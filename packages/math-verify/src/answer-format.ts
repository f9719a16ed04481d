import { goldAnswer, parseCandidate } from './answer.js';
import { answersEqual } from './compare/compare.js';
import { expandPm } from './compare/expand.js';
import { Deadline, DeadlineExceeded } from './deadline.js';
import { findBoxes } from './extract/boxed.js';
import { answerTags } from './extract/extract.js';
import type { Node } from './latex/ast.js';
import { canonicalString } from './latex/normalize.js';
import { LIMITS } from './limits.js';

export interface AnswerFormat {
  /** Outermost `\boxed{}` / `\fbox{}` in the response. */
  boxes: number;
  /** `<answer>...</answer>` tags. */
  tags: number;
  /** Different final answers among the boxes and tags: the same answer repeated (`3` and `3`, `\frac12` and `1/2`) counts once. */
  distinct: number;
  /** `none`: no final answer; `one`: one answer (however often it is repeated); `many`: different ones (hedging). */
  kind: 'none' | 'one' | 'many';
}

/**
 * How many different final answers a response commits to, for the answer-format penalty of
 * GRPO-RoC and for refusing hedged answers: among correct rollouts, prefer the ones that state
 * one answer; a response that boxes 2 and then 3 has not answered 3.
 */
export function answerFormat(response: string): AnswerFormat {
  const deadline = new Deadline(50);
  const text = response.length > LIMITS.maxScanChars ? response.slice(-LIMITS.maxScanChars) : response;
  let bodies: string[] = [];
  try {
    bodies = findBoxes(text, deadline).map((b) => b.body);
  } catch {
    bodies = [];
  }
  const tags = answerTags(text).map((t) => t.inner.trim());
  const distinct = distinctAnswers([...bodies, ...tags], deadline);
  return {
    boxes: bodies.length,
    tags: tags.length,
    distinct,
    kind: distinct === 0 ? 'none' : distinct === 1 ? 'one' : 'many',
  };
}

/**
 * Answers grouped by normalised text, then groups merged when their parses are mathematically
 * equal. Past `LIMITS.maxJoined` texts, or out of time, the text groups are the count.
 */
function distinctAnswers(answers: string[], deadline: Deadline): number {
  const texts = [...new Set(answers.map((a) => (a.length > LIMITS.maxAnswerChars ? a : canonicalString(a))))];
  if (texts.length <= 1 || texts.length > LIMITS.maxJoined) return texts.length;
  try {
    const reps: (Node | null)[] = [];
    const o = { deadline, allowSetRelation: false, floatRounding: 6 };
    for (const t of texts) {
      const node = parseCandidate(t, deadline);
      const same = node !== null && reps.some((r) => r !== null && answersEqual(r, node, o));
      if (!same) reps.push(node);
    }
    return reps.length;
  } catch (e) {
    if (e instanceof DeadlineExceeded) return texts.length;
    throw e;
  }
}

/**
 * Is this answer several values (`1, 2, 3`, `\{1, 2\}`, `\pm 2`) rather than one (`3`, `1,000`,
 * the point `(1, 2)`)? Read as `verify` reads a bare gold. For refusing a prose list where the gold
 * is a single value.
 */
export function isListAnswer(answer: string): boolean {
  const deadline = new Deadline(50);
  try {
    const node = goldAnswer(answer, deadline, true)?.node;
    if (!node) return false;
    return node.k === 'list' || node.k === 'set' || expandPm(node).length > 1;
  } catch {
    return false;
  }
}
