import { Rng } from '@agentrl/protocol';
import type { ProblemSplit } from './problem.js';

/**
 * The synthetic task: exact multiplication of multi-digit numbers. A tiny model cannot do it in its
 * head (the product's middle digits depend on every input digit), but it can copy the factors into
 * `print(a*b)` and copy the tool's output into `\boxed{}`: solvable with the tool, not without it.
 * The split is a pure function of the seed; held-out pairs never appear in training (nor do their
 * commuted twins).
 *
 * With `zeroPadShare` > 0 (the `roc` preset) a share of the problems writes one factor with a
 * leading zero, as numbers read from a fixed-width field are (`What is 0427 * 318?`). Copying that
 * factor into `print(0427 * 318)` is a SyntaxError in Python 3 (leading zeros in decimal integer
 * literals are not permitted), the realistic failing first call; `int('0427')` parses it. A model
 * that copies literally reaches the right answer only after a failed call and a fix: the positives
 * Resample-on-Correct can tell apart from clean ones.
 */
export function generateMultiplySplit(opts: {
  seed: number;
  digits: readonly [number, number];
  trainSize: number;
  heldOutSize: number;
  /** Share of problems written with a zero-padded factor (`042 * 317`); 0 = none (see zeroPadded). */
  zeroPadShare?: number;
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
  // Its own stream, so the pairs (and the default task) do not change with the share.
  const padRng = Rng.derive(opts.seed, 'task-zero-pad');
  const share = opts.zeroPadShare ?? 0;
  const written = pairs.map(([a, b]): [string, string] => {
    if (!(share > 0) || padRng.next() >= share) return [String(a), String(b)];
    return padRng.next() < 0.5 ? [`0${a}`, String(b)] : [String(a), `0${b}`];
  });
  const toProblem = ([a, b]: [bigint, bigint], split: string, i: number, at: number) => ({
    id: `${split}-${i}`,
    question: `What is ${written[at]![0]} * ${written[at]![1]}?`,
    answer: String(a * b),
  });
  return {
    heldOut: pairs.slice(0, opts.heldOutSize).map((p, i) => toProblem(p, 'heldout', i, i)),
    train: pairs.slice(opts.heldOutSize).map((p, i) => toProblem(p, 'train', i, i + opts.heldOutSize)),
  };
}

/** Whether a factor as written needs parsing (a leading zero makes it an invalid Python literal). */
export function zeroPadded(factor: string): boolean {
  return factor.length > 1 && factor.startsWith('0');
}

/** The two factors of a synthetic question, as written, for building demonstrations. */
export function parseFactors(question: string): [string, string] | null {
  const m = /(\d+)\s*\*\s*(\d+)/.exec(question);
  return m ? [m[1]!, m[2]!] : null;
}
