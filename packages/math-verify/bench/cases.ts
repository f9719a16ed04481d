import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Case {
  line: number;
  gold: string;
  pred: string;
  expected: boolean;
  group: string;
}

const here = dirname(fileURLToPath(import.meta.url));
/** The shipped copy of shared/datasets/math-verify-cases.jsonl (see test/fixtures/NOTICE.md). */
export const CASES_PATH = resolve(here, '../test/fixtures/math-verify-cases.jsonl');

export function loadCases(path = CASES_PATH): Case[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim().length > 0)
    .map((l, i) => ({ line: i + 1, ...(JSON.parse(l) as Omit<Case, 'line'>) }));
}
