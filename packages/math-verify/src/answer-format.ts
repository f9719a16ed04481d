import { Deadline } from './deadline.js';
import { findBoxes } from './extract/boxed.js';
import { answerTags } from './extract/extract.js';
import { LIMITS } from './limits.js';

export interface AnswerFormat {
  /** Outermost `\boxed{}` / `\fbox{}` in the response. */
  boxes: number;
  /** `<answer>...</answer>` tags. */
  tags: number;
  /** `none`: no final answer; `one`: exactly one box or tag; `many`: several (hedging). */
  kind: 'none' | 'one' | 'many';
}

/**
 * How many final answers a response commits to, for the answer-format penalty of GRPO-RoC:
 * among correct rollouts, prefer the ones that state one answer over those that box several.
 */
export function answerFormat(response: string): AnswerFormat {
  const deadline = new Deadline(50);
  let boxes = 0;
  const text = response.length > LIMITS.maxScanChars ? response.slice(-LIMITS.maxScanChars) : response;
  try {
    boxes = findBoxes(text, deadline).length;
  } catch {
    boxes = 0;
  }
  const tags = answerTags(text).length;
  const n = boxes + tags;
  return { boxes, tags, kind: n === 0 ? 'none' : n === 1 ? 'one' : 'many' };
}
