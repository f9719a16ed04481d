import { type Group, GroupSchema, type Trajectory } from '@agentrl/protocol';
import { z } from 'zod';
import { GrpoError, GrpoErrorCode } from './errors.js';

function invalid(field: string, message: string): GrpoError {
  return new GrpoError(GrpoErrorCode.INVALID_INPUT, message, { field });
}

/**
 * Cheap structural checks of one trajectory, O(1) per trajectory: a scored finite reward, token
 * arrays of one length, a prompt inside the sequence. It does not read the token arrays
 * themselves; `parseGroups` does that once at the edge.
 */
export function checkTrajectory(t: Trajectory, field: string, promptId?: string): void {
  if (t === null || typeof t !== 'object') throw invalid(field, 'is not a trajectory object');
  if (typeof t.reward !== 'number')
    throw invalid(`${field}.reward`, `is ${String(t.reward)}: score every trajectory before GRPO`);
  if (!Number.isFinite(t.reward))
    throw invalid(`${field}.reward`, `is ${t.reward}: rewards must be finite numbers; check the scorer`);
  const n = t.tokenIds?.length;
  if (n === undefined) throw invalid(`${field}.tokenIds`, 'is missing');
  if (t.logprobs?.length !== n)
    throw invalid(`${field}.logprobs`, `has ${t.logprobs?.length} entries, tokenIds has ${n}`);
  if (t.lossMask?.length !== n)
    throw invalid(`${field}.lossMask`, `has ${t.lossMask?.length} entries, tokenIds has ${n}`);
  if (!(t.promptLength >= 0 && t.promptLength <= n))
    throw invalid(`${field}.promptLength`, `is ${t.promptLength}, outside the ${n} tokens`);
  if (!Array.isArray(t.toolCalls)) throw invalid(`${field}.toolCalls`, 'is not an array');
  if (!Array.isArray(t.turns)) throw invalid(`${field}.turns`, 'is not an array');
  if (promptId !== undefined && t.promptId !== promptId)
    throw invalid(`${field}.promptId`, `is "${t.promptId}" in the group of prompt "${promptId}"`);
}

/** Cheap checks of a batch of groups: non-empty groups of well-formed, scored trajectories. */
export function checkGroups(groups: readonly Group[], name = 'groups'): void {
  if (!Array.isArray(groups)) throw invalid(name, 'is not an array of groups');
  for (let g = 0; g < groups.length; g++) {
    const group = groups[g]!;
    const field = `${name}[${g}]`;
    if (!Array.isArray(group?.trajectories)) throw invalid(`${field}.trajectories`, 'is not an array');
    if (group.trajectories.length === 0)
      throw invalid(`${field}.trajectories`, 'is empty: a group needs at least one trajectory');
    for (let i = 0; i < group.trajectories.length; i++)
      checkTrajectory(group.trajectories[i]!, `${field}.trajectories[${i}]`, group.promptId);
  }
}

/**
 * The full zod parse of untrusted input (JSON from disk or another process), once at the edge:
 * every token, mask value and tool outcome, then the cheap checks. Errors name the field,
 * `groups[3].trajectories[7].lossMask[12]`.
 */
export function parseGroups(input: unknown, name = 'groups'): Group[] {
  const r = z.array(GroupSchema).safeParse(input);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const field = name + issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
    throw new GrpoError(GrpoErrorCode.INVALID_INPUT, issue.message, { field, cause: r.error });
  }
  checkGroups(r.data, name);
  return r.data;
}
