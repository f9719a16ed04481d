import { countBoxedAnswers, formatPenaltyFromCount } from '@agentrl/grpo';
import type { Group, Trajectory } from '@agentrl/protocol';

/** The verifier the reward uses: @agentrl/math-verify's `verify`. */
export type Verify = (gold: string, response: string) => { correct: boolean; extracted: string | null };

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
export function scoreGroups(groups: Group[], gold: (promptId: string) => string, verify: Verify): void {
  for (const g of groups) {
    const answer = gold(g.promptId);
    g.trajectories = g.trajectories.map((t) => {
      const text = responseText(t);
      const v = verify(answer, text);
      return {
        ...t,
        reward: v.correct ? 1 : 0,
        answer: v.extracted,
        formatPenalty: formatPenaltyFromCount(countBoxedAnswers(text)),
      };
    });
  }
}
