import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type MpirunResult, runMpirun } from '../src/index.js';

export { mpirunMissing } from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
export const FIXTURES = resolve(here, 'fixtures');

/** A fixture script under `mpirun -n N` (node + tsx, real processes). */
export function runMpi(
  n: number,
  script: string,
  args: string[] = [],
  opts: { timeoutMs?: number; onLine?: (line: string) => void; env?: NodeJS.ProcessEnv } = {},
): Promise<MpirunResult> {
  return runMpirun(
    n,
    [process.execPath, '--conditions=@agentrl/source', '--import', 'tsx', resolve(FIXTURES, script), ...args],
    { timeoutMs: 60_000, ...opts },
  );
}

/** The `RESULT <json>` lines of a run, by rank. */
export function results<T>(run: MpirunResult): T[] {
  const out: T[] = [];
  for (const line of run.stdout.split('\n')) {
    if (!line.startsWith('RESULT ')) continue;
    const r = JSON.parse(line.slice(7)) as T & { rank: number };
    out[r.rank] = r;
  }
  return out;
}
