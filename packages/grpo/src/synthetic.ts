import {
  type Group,
  Rng,
  type ToolCallRecord,
  type ToolStatus,
  type Trajectory,
  type Turn,
} from '@agentrl/protocol';

export interface SyntheticOptions {
  prompts?: number;
  /** trajectories per prompt (N) */
  groupSize?: number;
  /** tokens per trajectory, prompt included */
  tokens?: number;
  /** probability that a tool call fails (runtime error, timeout, or a call that did not parse) */
  toolErrorRate?: number;
  seed?: number;
}

const FAILURES: ToolStatus[] = ['runtime_error', 'timeout', 'parse_error'];

/**
 * Seeded synthetic groups shaped like real agentic rollouts: a prompt, 0-4 tool calls with
 * masked-out tool responses, a final turn with zero, one or two `\boxed{}` answers, and a 0/1
 * reward drawn from a per-prompt difficulty. For the example, the benchmark and tests; the
 * tokens are random and mean nothing.
 */
export function createSyntheticGroups(options: SyntheticOptions = {}): Group[] {
  const { prompts = 8, groupSize = 32, tokens = 512, toolErrorRate = 0.3, seed = 0 } = options;
  const rng = Rng.seeded(seed);
  const uniform = () => rng.nextU32() / 0x1_0000_0000;
  const groups: Group[] = [];
  for (let p = 0; p < prompts; p++) {
    const promptId = `prompt-${p}`;
    // Some prompts nobody solves and some everybody does, as in real batches.
    const draw = uniform();
    const solveRate = draw < 0.1 ? 0 : draw > 0.95 ? 1 : uniform();
    const promptLength = Math.min(256, Math.floor(tokens / 4));
    const trajectories: Trajectory[] = [];
    for (let j = 0; j < groupSize; j++) {
      const calls = rng.below(5);
      const spans = 2 * calls + 1; // assistant, tool response, ..., final assistant
      const span = Math.max(1, Math.floor((tokens - promptLength) / spans));
      // Filled with push so that V8 keeps them packed, as JSON.parse and a rollout loop make them.
      const tokenIds: number[] = [];
      const logprobs: number[] = [];
      const lossMask: (0 | 1)[] = [];
      const turns: Turn[] = [
        { role: 'user', text: 'Solve the problem.', tokenStart: 0, tokenEnd: promptLength },
      ];
      const toolCalls: ToolCallRecord[] = [];
      for (let i = 0; i < tokens; i++) {
        const k = i < promptLength ? -1 : Math.min(spans - 1, Math.floor((i - promptLength) / span));
        const sampled = k >= 0 && k % 2 === 0;
        tokenIds.push(rng.below(32000));
        lossMask.push(sampled ? 1 : 0);
        logprobs.push(sampled ? -uniform() * 2 : 0);
      }
      for (let k = 0; k < spans; k++) {
        const start = promptLength + k * span;
        const end = k === spans - 1 ? tokens : start + span;
        const assistant = k % 2 === 0;
        const final = k === spans - 1;
        const boxes = final ? [0, 1, 1, 1, 2][rng.below(5)]! : 0;
        const text = assistant
          ? `Let me reason about it.${' The answer is \\boxed{42}.'.repeat(boxes)}`
          : '<tool_response>\n...\n</tool_response>';
        turns.push({ role: assistant ? 'assistant' : 'user', text, tokenStart: start, tokenEnd: end });
        if (!assistant) {
          const failed = uniform() < toolErrorRate;
          const status = failed ? FAILURES[rng.below(FAILURES.length)]! : 'ok';
          const parseFailed = status === 'parse_error';
          toolCalls.push({
            turn: (k - 1) / 2,
            call: parseFailed ? null : { name: 'python', arguments: { code: 'print(6 * 7)' } },
            parseFailure: parseFailed
              ? { kind: 'invalid_json', raw: '{"name": python', message: 'invalid JSON' }
              : null,
            outcome: {
              status,
              stdout: failed ? '' : '42\n',
              stderr: failed ? 'Traceback ...' : '',
              exitCode: failed ? 1 : 0,
              signal: null,
              wallMs: 12,
              cpuMs: 10,
            },
          });
        }
      }
      trajectories.push({
        id: `${promptId}-${j}`,
        promptId,
        tokenIds,
        promptLength,
        logprobs,
        lossMask,
        turns,
        toolCalls,
        finishReason: 'stop',
        reward: uniform() < solveRate ? 1 : 0,
      });
    }
    groups.push({ promptId, trajectories });
  }
  return groups;
}
