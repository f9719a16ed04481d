import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PKG = fileURLToPath(new URL('..', import.meta.url));

const stderrOf = new WeakMap<ChildProcess, string[]>();

/** Runs a TypeScript entry point of this package in its own process (source through tsx). */
export function spawnTs(script: string, args: string[]): ChildProcess {
  const proc = spawn(process.execPath, ['--conditions=@agentrl/source', '--import', 'tsx', script, ...args], {
    cwd: PKG,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const chunks: string[] = [];
  stderrOf.set(proc, chunks);
  proc.stderr?.on('data', (c: Buffer) => {
    chunks.push(c.toString());
    process.stderr.write(c);
  });
  return proc;
}

const stderrText = (proc: ChildProcess) => (stderrOf.get(proc) ?? []).join('');

/** Runs the package's bin in its own process, as a deployment would. */
export function spawnBin(args: string[]): ChildProcess {
  return spawnTs('src/bin.ts', args);
}

/** `agentrl-executor worker` arguments for a small worker (one lean fork server, no preload). */
export function workerArgs(redis: string, prefix: string, concurrency: number, ...extra: string[]): string[] {
  const pool = ['--servers', '1', '--concurrency', String(concurrency), '--preload', ''];
  return ['worker', '--redis', redis, '--prefix', prefix, ...pool, ...extra];
}

/** Resolves with the first match of `pattern` on the process's stdout; rejects if it exits first. */
export function waitForLine(proc: ChildProcess, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    proc.stdout?.on('data', (c: Buffer) => {
      seen += c.toString();
      const m = pattern.exec(seen);
      if (m) resolve(m[0]);
    });
    proc.once('exit', (code) =>
      reject(new Error(`process exited (${code}) before printing ${pattern}: ${seen}${stderrText(proc)}`)),
    );
  });
}

/** Waits for the process to exit; resolves with its exit code and stderr. */
export function exitOf(proc: ChildProcess): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null) resolve({ code: proc.exitCode, stderr: stderrText(proc) });
    proc.once('close', (code) => resolve({ code, stderr: stderrText(proc) }));
  });
}
