import type { ToolOutcome } from '@agentrl/protocol';
import type { Tool } from './tools.js';
import { toolError } from './tools.js';

/**
 * The part of @agentrl/executor's client the Python tool needs. `createExecutor(...)` from
 * @agentrl/executor satisfies it; any sandbox that returns a ToolOutcome does.
 */
export interface CodeExecutor {
  run(request: { code: string; stdin?: string; timeoutMs?: number }): Promise<ToolOutcome>;
}

export interface PythonToolOptions {
  /** Tool name the model calls; rStar2-Agent uses `execute_python_code_with_standard_io`. */
  name?: string;
  /** Per-call time limit passed to the executor. */
  timeoutMs?: number;
}

/** The default tool: run Python code (with optional stdin) in the executor's sandbox. */
export function createPythonTool(executor: CodeExecutor, options: PythonToolOptions = {}): Tool {
  return {
    name: options.name ?? 'execute_python_code_with_standard_io',
    description:
      'Execute Python code and return what it printed. Use print() to see results; state is not kept between calls.',
    parameters: {
      type: 'object',
      properties: {
        code: { type: 'string', description: 'the Python program to run' },
        input: { type: 'string', description: 'text passed to the program on standard input' },
      },
      required: ['code'],
    },
    async handler(args) {
      const code = args.code;
      if (typeof code !== 'string' || code.length === 0) {
        return toolError('the "code" argument must be a non-empty string of Python', 0, 'parse_error');
      }
      const stdin = typeof args.input === 'string' ? args.input : undefined;
      return executor.run({
        code,
        ...(stdin !== undefined ? { stdin } : {}),
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      });
    },
  };
}
