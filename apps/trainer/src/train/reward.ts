import { countBoxedAnswers, formatPenaltyFromCount } from '@agentrl/grpo';
import { answerFormat, isListAnswer } from '@agentrl/math-verify';
import type { Group, Trajectory } from '@agentrl/protocol';

/** The verifier the reward uses: @agentrl/math-verify's `verify`. */
export type Verify = (gold: string, response: string) => { correct: boolean; extracted: string | null };

/** How an answer is read before it is verified (see the `task.reward` option). */
export type RewardMode = 'boxed-integer' | 'boxed' | 'any' | 'rstar';

/** The content of the last `\\boxed{...}` (nested braces), or null when there is none or it is unterminated. */
export function lastBoxed(text: string): string | null {
  const at = text.lastIndexOf('\\boxed{');
  if (at < 0) return null;
  let depth = 0;
  for (let i = at + 6; i < text.length; i++) {
    const c = text[i];
    if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return text.slice(at + 7, i);
  }
  return null;
}

const ANSWER_MARKERS = ['answer:', 'answer is', 'answers are'];

/**
 * The answer as rStar2-Agent's reward reads it first (verl `reward_score/prime_math` `match_answer`,
 * called from `recipe/rstar2_agent/src/reward/compute_score.py`): the text after the last
 * "answer:" / "answer is" / "answers are" (case-insensitive; DAPO's "Answer: 42" lines), then the
 * content of the last \\boxed{} in what is left. Null when the response has neither. (The
 * reference's further cuts at "is " / "=" are left out: math-verify on the whole response, the
 * reference's second check, covers those answers.)
 */
export function markedAnswer(text: string): string | null {
  let rest = text;
  let matched = false;
  for (const marker of ANSWER_MARKERS) {
    const at = rest.toLowerCase().lastIndexOf(marker);
    if (at >= 0) {
      rest = rest.slice(at + marker.length).trim();
      matched = true;
    }
  }
  const boxed = lastBoxed(rest);
  if (boxed !== null) return boxed.trim();
  if (!matched) return null;
  const line = rest
    .split('\n')[0]!
    .replace(/[.\s]+$/, '')
    .replace(/^\$+|\$+$/g, '')
    .trim();
  return line === '' ? null : line;
}

/**
 * Does the response commit to several different final answers? Boxes or `<answer>` tags that are
 * not all the same answer (a repeat of one answer, `\\boxed{5}` twice, is fine), or a marked
 * answer that is a list ("the answers are 1, 2, 3") where the gold is one value. rStar2-Agent's
 * answer-format rule: hedging is not answering, even when the last candidate is right.
 */
export function hedges(gold: string, text: string): boolean {
  if (answerFormat(text).kind === 'many') return true;
  const marked = markedAnswer(text);
  return marked !== null && isListAnswer(marked) && !isListAnswer(gold);
}

/**
 * Reward 1 or 0 for one response, 0 in every mode when it `hedges`. `boxed` verifies only the last
 * \\boxed{} (the answer the system prompt asks for), so text that merely ends in an expression is
 * not an answer; `boxed-integer` also requires an integer literal, so restating the question's
 * `612 * 797` is not an answer to "what is 612 * 797?" even though a CAS finds it equal. Both close
 * a reward hack plain GRPO found on the synthetic task (BENCHMARKS.md).
 */
export function rewardOf(
  gold: string,
  text: string,
  mode: RewardMode,
  verify: Verify,
): { reward: number; answer: string | null } {
  const r = readAndVerify(gold, text, mode, verify);
  return r.reward === 1 && hedges(gold, text) ? { reward: 0, answer: r.answer } : r;
}

function readAndVerify(
  gold: string,
  text: string,
  mode: RewardMode,
  verify: Verify,
): { reward: number; answer: string | null } {
  if (mode === 'rstar') {
    // rStar2-Agent's compute_score: prime_math's answer matching first, then math_verify.
    const marked = markedAnswer(text);
    if (marked !== null && verify(gold, `\\boxed{${marked}}`).correct) return { reward: 1, answer: marked };
    const v = verify(gold, text);
    return { reward: v.correct ? 1 : 0, answer: v.correct ? v.extracted : (marked ?? v.extracted) };
  }
  if (mode === 'any') {
    const v = verify(gold, text);
    return { reward: v.correct ? 1 : 0, answer: v.extracted };
  }
  const boxed = lastBoxed(text);
  if (boxed === null) return { reward: 0, answer: null };
  if (mode === 'boxed-integer' && !/^\s*-?\d[\d,]*\s*$/.test(boxed)) return { reward: 0, answer: boxed };
  return { reward: verify(gold, `\\boxed{${boxed}}`).correct ? 1 : 0, answer: boxed };
}

/** The reward mode a config asks for (`auto`: integer answers for the synthetic task). */
export function rewardModeOf(task: { reward: 'auto' | RewardMode; kind: 'multiply' | 'files' }): RewardMode {
  if (task.reward !== 'auto') return task.reward;
  return task.kind === 'multiply' ? 'boxed-integer' : 'boxed';
}

/** The model's whole response: every assistant turn, in order (tool responses left out). */
export function responseText(t: Pick<Trajectory, 'turns'>): string {
  return t.turns
    .filter((turn) => turn.role === 'assistant')
    .map((turn) => turn.text)
    .join('\n');
}

/**
 * Scores every trajectory in place: reward 1 for a verified-correct final answer, 0 otherwise (no
 * format reward, as in the reference), plus the extracted answer and the answer-format penalty RoC
 * ranks positives by.
 */
export function scoreGroups(
  groups: Group[],
  gold: (promptId: string) => string,
  verify: Verify,
  mode: RewardMode = 'boxed',
): void {
  for (const g of groups) {
    const answer = gold(g.promptId);
    g.trajectories = g.trajectories.map((t) => {
      const text = responseText(t);
      const r = rewardOf(answer, text, mode, verify);
      return {
        ...t,
        reward: r.reward,
        answer: r.answer,
        formatPenalty: formatPenaltyFromCount(countBoxedAnswers(text)),
      };
    });
  }
}
