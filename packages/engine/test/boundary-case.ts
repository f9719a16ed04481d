import { spawnSync } from 'node:child_process';

/** What a native-boundary child script prints for one case. */
export interface BoundaryCaseResult {
  threw: boolean;
  code?: string;
  message?: string;
  isError?: boolean;
  fuzzThrew?: number;
}

/** Runs one case of a child script in its own process: a crash fails the case, not the runner. */
export function runBoundaryCase(child: string, ...argv: string[]): BoundaryCaseResult {
  const r = spawnSync(process.execPath, [child, ...argv], { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) {
    throw new Error(
      `case "${argv[0]}" killed its process (status ${r.status}, signal ${r.signal}): ${r.stderr.slice(-500)}`,
    );
  }
  return JSON.parse(r.stdout.trim().split('\n').pop() as string);
}
