// The README's library example as the tests run it: the first ```js block under "## As a library",
// taken from README.md itself so that the README cannot drift from what CI runs.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The trained run the example reads in the tests (see test/fixtures/tiny-run/README.md). */
export const TINY_RUN_FIXTURE = fileURLToPath(new URL('../fixtures/tiny-run', import.meta.url));

export function readmeLibraryExample(): string {
  const readme = readFileSync(new URL('README.md', `file://${REPO_ROOT}`), 'utf8');
  const section = readme.split(/^## As a library$/m)[1]?.split(/^## /m)[0];
  const code = section?.match(/^```js\n([\s\S]*?)^```$/m)?.[1];
  if (!code) throw new Error('README.md: no ```js block under "## As a library"');
  return code;
}

/** What the example prints: the 16 rewards, RoC's counts and the kept group's advantages. */
export function parseExampleOutput(stdout: string) {
  const line = (prefix: string) => stdout.split('\n').find((l) => l.startsWith(prefix)) ?? '';
  const numbers = (s: string) => s.split(' ').slice(1).filter(Boolean).map(Number);
  return {
    rewards: numbers(line('rewards ')),
    roc: line('RoC kept '),
    advantages: numbers(line('advantages ')),
  };
}
