import type { Group, ToolCallRecord, ToolStatus, Trajectory } from '@agentrl/protocol';

/** A tool call record with the given status; `parse_error` gets a null call and a parse failure. */
export function toolCall(status: ToolStatus, turn = 0): ToolCallRecord {
  const parseFailed = status === 'parse_error';
  return {
    turn,
    call: parseFailed ? null : { name: 'python', arguments: { code: 'print(1)' } },
    parseFailure: parseFailed ? { kind: 'invalid_json', raw: '{', message: 'invalid JSON' } : null,
    outcome: { status, stdout: '', stderr: '', exitCode: 0, signal: null, wallMs: 1, cpuMs: null },
  };
}

export interface TrajectorySpec {
  reward: number;
  /** statuses of the tool calls made, in order */
  calls?: ToolStatus[];
  /** final-turn text; default one boxed answer */
  answer?: string;
  formatPenalty?: number;
  tokens?: number;
}

/** A small well-formed trajectory: 2 prompt tokens, the rest sampled. */
export function trajectory(spec: TrajectorySpec, id = 't', promptId = 'p'): Trajectory {
  const n = spec.tokens ?? 4;
  const t: Trajectory = {
    id,
    promptId,
    tokenIds: Array.from({ length: n }, (_, i) => i + 1),
    promptLength: 2,
    logprobs: Array.from({ length: n }, (_, i) => (i < 2 ? 0 : -0.25)),
    lossMask: Array.from({ length: n }, (_, i) => (i < 2 ? 0 : 1)),
    turns: [
      { role: 'user', text: 'q', tokenStart: 0, tokenEnd: 2 },
      { role: 'assistant', text: spec.answer ?? 'so \\boxed{1}', tokenStart: 2, tokenEnd: n },
    ],
    toolCalls: (spec.calls ?? []).map((s, i) => toolCall(s, i)),
    finishReason: 'stop',
    reward: spec.reward,
  };
  if (spec.formatPenalty !== undefined) t.formatPenalty = spec.formatPenalty;
  return t;
}

/** A group from specs; trajectory ids are `${promptId}-${index}`. */
export function group(specs: TrajectorySpec[], promptId = 'p'): Group {
  return { promptId, trajectories: specs.map((s, i) => trajectory(s, `${promptId}-${i}`, promptId)) };
}

/** n copies of a spec. */
export function times(n: number, spec: TrajectorySpec): TrajectorySpec[] {
  return Array.from({ length: n }, () => ({ ...spec }));
}
