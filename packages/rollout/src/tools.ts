import type { ToolCall, ToolOutcome } from '@agentrl/protocol';
import { RolloutError, RolloutErrorCode } from './errors.js';

/** What a tool handler gets besides its arguments. */
export interface ToolContext {
  trajectoryId: string;
  signal?: AbortSignal;
}

/** One tool: its name, a JSON schema of its arguments (shown to the model), and its handler. */
export interface Tool {
  name: string;
  description: string;
  /** JSON schema of `arguments`, as rendered into the chat template's tool list. */
  parameters: Record<string, unknown>;
  handler(args: Record<string, unknown>, context: ToolContext): Promise<ToolOutcome>;
}

/** Tools by name; the agent loop dispatches parsed calls through it. */
export interface ToolRegistry {
  readonly names: ReadonlySet<string>;
  get(name: string): Tool | undefined;
  /** The tools in the OpenAI/HF `tools` shape chat templates expect. */
  schemas(): Array<{ type: 'function'; function: Omit<Tool, 'handler'> }>;
  /** Runs a parsed call. A handler that throws becomes a `tool_error` outcome, never an exception. */
  run(call: ToolCall, context: ToolContext): Promise<ToolOutcome>;
}

export function createToolRegistry(tools: readonly Tool[]): ToolRegistry {
  const byName = new Map<string, Tool>();
  for (const tool of tools) {
    if (byName.has(tool.name)) {
      throw new RolloutError(
        RolloutErrorCode.INVALID_CONFIG,
        `rollout: two tools are named "${tool.name}"; give each tool a unique name`,
      );
    }
    byName.set(tool.name, tool);
  }
  const names = new Set(byName.keys());
  return {
    names,
    get: (name) => byName.get(name),
    schemas: () =>
      [...byName.values()].map(({ name, description, parameters }) => ({
        type: 'function' as const,
        function: { name, description, parameters },
      })),
    async run(call, context) {
      const tool = byName.get(call.name);
      const started = performance.now();
      if (!tool) return toolError(`unknown tool "${call.name}"`, 0);
      try {
        return await tool.handler(call.arguments, context);
      } catch (err) {
        return toolError(
          `tool "${call.name}" failed: ${(err as Error).message}`,
          performance.now() - started,
        );
      }
    },
  };
}

/** An outcome for a tool that could not run; counts as a failed call for RoC. */
export function toolError(
  message: string,
  wallMs: number,
  status: 'tool_error' | 'parse_error' = 'tool_error',
): ToolOutcome {
  return { status, stdout: '', stderr: message, exitCode: null, signal: null, wallMs, cpuMs: null };
}
