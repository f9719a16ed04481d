import { readdirSync, readFileSync } from 'node:fs';

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

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
