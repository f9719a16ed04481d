import { spawn } from 'node:child_process';
import type { ToolOutcome } from '@agentrl/protocol';
import type { CodeExecutor } from '../../src/python-tool.js';

/** Runs code in a real python3 process (no sandbox): stands in until @agentrl/executor lands. */
export function createPythonRunner(): CodeExecutor {
  return {
    run: ({ code, stdin, timeoutMs = 5000 }) =>
      new Promise<ToolOutcome>((resolve) => {
        const started = performance.now();
        const child = spawn('python3', ['-c', code], { stdio: ['pipe', 'pipe', 'pipe'], timeout: timeoutMs });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d) => (stdout += d));
        child.stderr.on('data', (d) => (stderr += d));
        child.stdin.end(stdin ?? '');
        child.on('close', (exitCode, signal) =>
          resolve({
            status: signal ? 'timeout' : exitCode === 0 ? 'ok' : 'runtime_error',
            stdout,
            stderr,
            exitCode,
            signal,
            wallMs: performance.now() - started,
            cpuMs: null,
          }),
        );
      }),
  };
}
