import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Host processes whose command line contains `needle` (the test's view of an escaped process). */
export function hostProcessesMatching(needle: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmd.includes(needle)) out.push(Number(entry));
    } catch {
      // the process exited while we looked
    }
  }
  return out;
}

/** Number of processes on the host right now. */

/** Processes descending from `roots` (not the roots themselves), from /proc's parent links. */
export function descendantsOf(roots: readonly number[]): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {
      // the process exited while we looked
    }
  }
  const out: number[] = [];
  const stack = [...roots];
  while (stack.length > 0) {
    for (const child of children.get(stack.pop() as number) ?? []) {
      out.push(child);
      stack.push(child);
    }
  }
  return out;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts the package's CLI (`agentrl-executor serve ...`, source through tsx) in its own process; its URL. */
export async function startServeCli(args: string[]): Promise<{ url: string; proc: ChildProcess }> {
  const pkg = fileURLToPath(new URL('..', import.meta.url));
  const proc = spawn(
    process.execPath,
    ['--conditions=@agentrl/source', '--import', 'tsx', 'src/bin.ts', 'serve', '--port', '0', ...args],
    { cwd: pkg, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const take = (c: Buffer) => {
      out += c.toString();
      const m = /serving on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1] as string);
    };
    proc.stdout?.on('data', take);
    proc.stderr?.on('data', take);
    proc.once('exit', (code) => reject(new Error(`serve exited (${code}) before listening: ${out}`)));
  });
  return { url, proc };
}
