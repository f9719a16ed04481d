import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const TEST_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const REPO = resolve(TEST_DIR, '..');
const BIN_SRC = join(REPO, 'apps/trainer/src/bin.ts');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Starts the real `agentrl` CLI from source in a child process (as a user would run it). */
export function startCli(
  args: string[],
  env: Record<string, string> = {},
): ChildProcess & { result: Promise<CliResult> } {
  const child = spawn(
    process.execPath,
    ['--conditions=@agentrl/source', '--import', 'tsx', BIN_SRC, ...args],
    {
      cwd: TEST_DIR,
      env: { ...process.env, FORCE_COLOR: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => {
    stdout += d;
  });
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  const result = new Promise<CliResult>((res) => {
    child.on('close', (code, signal) => res({ code, signal, stdout, stderr }));
  });
  return Object.assign(child, { result });
}

/** Starts `agentrl serve <args>` and resolves with its URL once it prints that it listens. */
export async function startServer(
  args: string[],
): Promise<{ url: string; child: ReturnType<typeof startCli> }> {
  const child = startCli(['serve', ...args]);
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`agentrl serve exited ${code}: ${out}`)));
  });
  return { url, child };
}

export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return startCli(args, env).result;
}

/** metrics.jsonl lines, parsed (a torn last line is ignored). */
export function readJsonl(path: string): Record<string, unknown>[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

/** Resolves when `predicate` holds, polling every 20 ms, or rejects after `ms`. */
export async function waitFor(predicate: () => boolean, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
