import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { TrainerError } from '../errors.js';
import type { Problem } from '../task/problem.js';
import { normalizePrompt, rowToProblem } from './rows.js';

/** Problems read from files, and how many rows were skipped (and why) instead of stopping the run. */
export interface LoadedDataset {
  problems: Problem[];
  skipped: { row: number; file: string; reason: string }[];
  /** Rows dropped because an earlier row had the same normalised prompt. */
  duplicates: number;
  /** Of those, rows whose answer differed from the kept row's (the first row's answer is kept). */
  conflicts: number;
}

/**
 * Reads dataset files (jsonl or parquet) in the reference's layouts (see `rowToProblem`). A row
 * without a usable prompt or answer is skipped and counted; a row whose normalised prompt repeats
 * an earlier one is dropped and counted; ids are made unique per load.
 */
export async function loadDatasetFiles(files: readonly string[]): Promise<LoadedDataset> {
  const out: LoadedDataset = { problems: [], skipped: [], duplicates: 0, conflicts: 0 };
  const byPrompt = new Map<string, Problem>();
  const ids = new Set<string>();
  for (const file of files) {
    const rows = await readRows(file);
    rows.forEach((row, i) => {
      const parsed = rowToProblem(row, `${file}#${i}`);
      if (typeof parsed === 'string') {
        out.skipped.push({ row: i, file, reason: parsed });
        return;
      }
      const key = normalizePrompt(parsed.question);
      const first = byPrompt.get(key);
      if (first) {
        out.duplicates++;
        if (first.answer !== parsed.answer) out.conflicts++;
        return;
      }
      const id = ids.has(parsed.id) ? `${file}#${i}` : parsed.id;
      ids.add(id);
      const problem = { ...parsed, id };
      byPrompt.set(key, problem);
      out.problems.push(problem);
    });
  }
  if (out.problems.length === 0) {
    const why = out.skipped[0]
      ? ` (first skip: ${out.skipped[0].file} row ${out.skipped[0].row}: ${out.skipped[0].reason})`
      : '';
    throw new TrainerError(
      'DATASET',
      `dataset: no usable rows in ${files.join(', ')}${why}; rows need a prompt/question and reward_model.ground_truth or answer`,
    );
  }
  return out;
}

/** The rows of one jsonl or parquet file; a jsonl line that is not JSON becomes `{__invalid}`. */
export async function readRows(file: string): Promise<unknown[]> {
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch (cause) {
    throw new TrainerError('DATASET', `dataset: cannot read ${file}; check the path`, { cause });
  }
  if (extname(file) === '.parquet') {
    const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer;
    try {
      return await parquetReadObjects({ file: ab });
    } catch (cause) {
      throw new TrainerError(
        'DATASET',
        `dataset: ${file} is not a readable parquet file: ${(cause as Error).message}`,
        { cause },
      );
    }
  }
  const rows: unknown[] = [];
  buf
    .toString('utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.trim() === '') return;
      try {
        rows.push(JSON.parse(line));
      } catch {
        rows.push({ __invalid: `line ${i + 1} is not JSON` });
      }
    });
  return rows;
}
