import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { TrainerError } from '../errors.js';
import type { Problem } from '../task/problem.js';

/** Problems read from files, and how many rows were skipped (and why) instead of stopping the run. */
export interface LoadedDataset {
  problems: Problem[];
  skipped: { row: number; file: string; reason: string }[];
}

/**
 * Reads dataset files in the reference's layouts: verl-style rows (`prompt` as a chat list or a
 * string, answer in `reward_model.ground_truth`), or plain `question`/`answer` (also `problem`/
 * `solution`-free `answer`). jsonl or parquet. A row without a usable answer is skipped and counted.
 */
export async function loadDatasetFiles(files: readonly string[]): Promise<LoadedDataset> {
  const out: LoadedDataset = { problems: [], skipped: [] };
  for (const file of files) {
    const rows = await readRows(file);
    rows.forEach((row, i) => {
      const parsed = rowToProblem(row, `${file}#${i}`);
      if (typeof parsed === 'string') out.skipped.push({ row: i, file, reason: parsed });
      else out.problems.push(parsed);
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

async function readRows(file: string): Promise<unknown[]> {
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

/** One row → a problem, or the reason it was skipped. */
export function rowToProblem(row: unknown, id: string): Problem | string {
  if (typeof row !== 'object' || row === null) return 'not an object';
  const r = row as Record<string, unknown>;
  if (typeof r.__invalid === 'string') return r.__invalid;
  const question = promptText(r.prompt ?? r.question ?? r.problem);
  if (!question) return 'no prompt or question';
  const rm = r.reward_model as Record<string, unknown> | undefined;
  const gold = rm?.ground_truth ?? r.answer ?? r.ground_truth;
  const answer = Array.isArray(gold) ? gold.map(String).join(', ') : gold == null ? '' : String(gold);
  if (answer.trim() === '') return 'no answer (reward_model.ground_truth or answer)';
  const rowId = typeof r.id === 'string' || typeof r.id === 'number' ? String(r.id) : id;
  return { id: rowId, question, answer };
}

/** The user text of a prompt given as a string or as a chat list (the last user message). */
function promptText(p: unknown): string | null {
  if (typeof p === 'string') return p.trim() || null;
  if (Array.isArray(p)) {
    const users = p.filter((m) => m && typeof m === 'object' && (m as { role?: unknown }).role === 'user');
    const last = users[users.length - 1] as { content?: unknown } | undefined;
    return typeof last?.content === 'string' && last.content.trim() ? last.content : null;
  }
  return null;
}
