import type { Problem } from '../task/problem.js';

/**
 * DAPO-Math-17k wraps each problem in an instruction to end with "Answer: $Answer". The trainer
 * adds its own instruction (the system prompt), so the wrapper is cut and the bare problem kept:
 * the same problem from a DAPO file and a plain file then de-duplicates, and the reward reads
 * "Answer:" lines anyway in the `rstar` mode.
 */
const DAPO_HEAD =
  /^\s*Solve the following math problem step by step\.[^\n]*?Answer:\s*\$Answer[^\n]*(?:\n|$)\s*/;
const DAPO_TAIL = /\s*Remember to put your answer on its own line after "Answer:"\.?\s*$/;

/** The bare problem of a DAPO-style prompt; other prompts come back unchanged. */
export function stripDapoInstruction(text: string): string {
  if (!DAPO_HEAD.test(text)) return text;
  return text.replace(DAPO_HEAD, '').replace(DAPO_TAIL, '').trim();
}

/** The key prompts are compared by for de-duplication and the held-out split. */
export function normalizePrompt(text: string): string {
  return text.normalize('NFKC').replace(/\s+/g, ' ').trim().toLowerCase();
}

/**
 * One row → a problem, or the reason it was skipped. Layouts: verl / rStar2-Agent rows (`prompt` as
 * a chat list or a string, `reward_model.ground_truth`, `data_source`), plain `question` /
 * `problem` with `answer` (a GSM8K `... #### 18` answer gives `18`), `ground_truth`, or
 * `extra_info.answer`. List golds are joined with ", ".
 */
export function rowToProblem(row: unknown, id: string): Problem | string {
  if (typeof row !== 'object' || row === null || Array.isArray(row)) return 'not an object';
  const r = row as Record<string, unknown>;
  if (typeof r.__invalid === 'string') return r.__invalid;
  const raw = promptText(r.prompt ?? r.question ?? r.problem);
  if (!raw) return 'no prompt or question (prompt as a string or chat list, question, or problem)';
  const question = stripDapoInstruction(raw);
  if (!question) return 'the prompt is only the DAPO instruction, no problem';
  const rm = isObject(r.reward_model) ? r.reward_model : undefined;
  const extra = isObject(r.extra_info) ? r.extra_info : undefined;
  const gold = rm?.ground_truth ?? r.answer ?? r.ground_truth ?? extra?.answer;
  let answer = Array.isArray(gold) ? gold.map(String).join(', ') : gold == null ? '' : String(gold);
  const hashes = answer.lastIndexOf('\n#### ');
  if (hashes >= 0) answer = answer.slice(hashes + 6);
  answer = answer.trim();
  if (answer === '') return 'no answer (reward_model.ground_truth or answer)';
  const rowId = typeof r.id === 'string' || typeof r.id === 'number' ? String(r.id) : id;
  const dataSource = typeof r.data_source === 'string' ? r.data_source : undefined;
  return { id: rowId, question, answer, ...(dataSource ? { dataSource } : {}) };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The user text of a prompt given as a string or as a chat list (the last user message). */
function promptText(p: unknown): string | null {
  if (typeof p === 'string') return p.trim() || null;
  if (Array.isArray(p)) {
    const users = p.filter((m) => isObject(m) && m.role === 'user');
    const last = users[users.length - 1] as { content?: unknown } | undefined;
    return typeof last?.content === 'string' && last.content.trim() ? last.content.trim() : null;
  }
  return null;
}
