/**
 * Memo tables of one comparison (a verify() call's answersEqual): values computed once per AST node and
 * reused across sample points and across the pairs of a list's items. Plain Maps, emptied when the
 * outermost comparison ends, not WeakMaps: every verify() parses fresh nodes, and WeakMap entries are
 * ephemerons the garbage collector must trace specially (under the profiler GC was 15 % of the slowest
 * bench case with WeakMaps). Outside a comparison nothing is cached (nothing could empty it).
 */
let depth = 0;
const tables: Map<object, unknown>[] = [];

/** A memo table keyed by node, live only inside enterMemo()/leaveMemo(). */
export function memoTable<K extends object, V>(): Map<K, V> {
  const t = new Map<K, V>();
  tables.push(t as Map<object, unknown>);
  return t;
}

/** True while a comparison is running (callers cache only then). */
export const memoActive = (): boolean => depth > 0;

export function enterMemo(): void {
  depth++;
}

/** Ends a comparison; the outermost one empties every table. */
export function leaveMemo(): void {
  if (--depth === 0) for (const t of tables) if (t.size > 0) t.clear();
}

/** Entries held in all memo tables now (0 between comparisons; for tests). */
export function memoEntries(): number {
  let n = 0;
  for (const t of tables) n += t.size;
  return n;
}
