import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const INDEX = fileURLToPath(new URL('../src/index.ts', import.meta.url));

/**
 * A fresh process: its first verify call, then the same call warm, both with a 10 ms budget. The
 * input takes under 2 ms warm; cold, V8's lazy compilation alone took 13-100 ms here.
 */
const CHILD = `
import { verify } from ${JSON.stringify(INDEX)};
const gold = '\\\\tan^2(y)+1';
const response = 'We use $\\\\sin^2 y + \\\\cos^2 y = 1$ and divide by $\\\\cos^2 y$: the answer is $\\\\sec^2(y)$.';
const first = verify(gold, response, { timeoutMs: 10 });
const warm = verify(gold, response, { timeoutMs: 10 });
process.stdout.write(JSON.stringify({ first, warm }));
`;

async function freshFirstCall(): Promise<{ first: { reason: string }; warm: { reason: string } }> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    timeout: 60_000,
  });
  return JSON.parse(stdout);
}

describe('cold start', () => {
  it("does not charge a fresh process's lazy compilation to its first call's budget", async () => {
    // A shared machine can deschedule any call for more than 10 ms; a process whose warm call also
    // timed out was such a moment and does not count. Among the others the first call must decide
    // like the warm one (before the warm-up, it timed out in nearly every fresh process).
    const runs = [];
    for (let i = 0; i < 5; i++) runs.push(await freshFirstCall());
    const calm = runs.filter((r) => r.warm.reason === 'equal');
    expect(calm.length, JSON.stringify(runs)).toBeGreaterThanOrEqual(3);
    expect(calm.filter((r) => r.first.reason !== 'equal').length, JSON.stringify(runs)).toBeLessThanOrEqual(
      1,
    );
  }, 120_000);
});
