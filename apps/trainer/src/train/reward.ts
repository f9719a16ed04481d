import { countBoxedAnswers, formatPenaltyFromCount } from '@agentrl/grpo';
import type { Group, Trajectory } from '@agentrl/protocol';

/** The verifier the reward uses: @agentrl/math-verify's `verify`. */
export type Verify = (gold: string, response: string) => { correct: boolean; extracted: string | null };

/** How an answer is read before it is verified (see the `task.reward` option). */
export type RewardMode = 'boxed-integer' | 'boxed' | 'any';

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

/**
 * Reward 1 or 0 for one response. `boxed` verifies only the last \\boxed{} (the answer the system
 * prompt asks for), so text that merely ends in an expression is not an answer; `boxed-integer`
 * also requires an integer literal, so restating the question's `612 * 797` is not an answer to
 * "what is 612 * 797?" even though a CAS finds it equal. Both close a reward hack plain GRPO found
 * on the synthetic task (BENCHMARKS.md).
 */
export function rewardOf(
  gold: string,
  text: string,
  mode: RewardMode,
  verify: Verify,
): { reward: number; answer: string | null } {
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
