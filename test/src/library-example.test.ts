// The README's library example, run as written against the workspace's packages (the consumer test,
// consumer-install.test.ts, runs it again from the packed tarballs): a trained tiny checkpoint, the
// native engine behind the KV-aware scheduler, the embedded sandboxed executor, the verifier, one
// RoC decision and its advantages. It must exit by itself: it closes what it opens.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { parseExampleOutput, readmeLibraryExample, TINY_RUN_FIXTURE } from './readme-example.js';

// Inside test/, so that the example's bare imports resolve to this package's workspace dependencies.
const dir = mkdtempSync(join(import.meta.dirname, '..', 'node_modules', '.readme-example-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('runs the README library example: 16 samples of a trained policy, RoC keeps 8, non-zero advantages', () => {
  const file = join(dir, 'example.mjs');
  writeFileSync(file, readmeLibraryExample());
  const r = spawnSync(process.execPath, [file, TINY_RUN_FIXTURE], { encoding: 'utf8', timeout: 120_000 });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0); // exited by itself, before the timeout
  const out = parseExampleOutput(r.stdout);
  expect(out.rewards).toHaveLength(16);
  // The trained policy solves some of the 16, not all: a group with a signal.
  expect(out.rewards.filter((x) => x === 1).length).toBeGreaterThan(0);
  expect(out.rewards.filter((x) => x === 0).length).toBeGreaterThan(0);
  expect(out.roc).toMatch(/^RoC kept \d+ of \d+ correct, \d+ of \d+ wrong$/);
  expect(out.advantages).toHaveLength(8);
  expect(out.advantages.some((a) => a > 0) && out.advantages.some((a) => a < 0)).toBe(true);
  expect(Math.abs(out.advantages.reduce((a, b) => a + b, 0))).toBeLessThan(0.05);
}, 150_000);
