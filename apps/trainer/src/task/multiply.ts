import { Rng } from '../rng.js';
import type { ProblemSplit } from './problem.js';

/**
 * The synthetic task: exact multiplication of multi-digit numbers. A tiny model cannot do it in its
 * head (the product's middle digits depend on every input digit), but it can copy the factors into
 * `print(a*b)` and copy the tool's output into `\boxed{}`: solvable with the tool, not without it.
 * The split is a pure function of the seed; held-out pairs never appear in training (nor do their
 * commuted twins).
 */
export function generateMultiplySplit(opts: {
  seed: number;
  digits: readonly [number, number];
  trainSize: number;
  heldOutSize: number;
}): ProblemSplit {
  const [da, db] = opts.digits;
  const space = 9 * 10 ** (da - 1) * 9 * 10 ** (db - 1);
  const want = opts.trainSize + opts.heldOutSize;
  if (want > space / 2) {
    throw new Error(
      `task: ${want} problems asked, but ${da}x${db}-digit products only have ~${space / 2} distinct pairs; use more digits or fewer problems`,
    );
  }
  const rng = Rng.derive(opts.seed, 'task-split');
  const seen = new Set<string>();
  const pairs: [bigint, bigint][] = [];
  while (pairs.length < want) {
    const a = rng.int(10 ** (da - 1), 10 ** da - 1);
    const b = rng.int(10 ** (db - 1), 10 ** db - 1);
    const key = a <= b ? `${a}x${b}` : `${b}x${a}`;
    if (seen.has(key)) continue;
    seen.add(key);
    pairs.push([BigInt(a), BigInt(b)]);
  }
  const toProblem = ([a, b]: [bigint, bigint], split: string, i: number) => ({
    id: `${split}-${i}`,
    question: `What is ${a} * ${b}?`,
    answer: String(a * b),
  });
  return {
    heldOut: pairs.slice(0, opts.heldOutSize).map((p, i) => toProblem(p, 'heldout', i)),
    train: pairs.slice(opts.heldOutSize).map((p, i) => toProblem(p, 'train', i)),
  };
}

/** The two factors of a synthetic question, for building demonstrations. */
export function parseFactors(question: string): [string, string] | null {
  const m = /(\d+)\s*\*\s*(\d+)/.exec(question);
  return m ? [m[1]!, m[2]!] : null;
}
