/** One place in a response that may hold the final answer. */
export interface Candidate {
  /** The answer text (LaTeX or plain), before normalisation. */
  text: string;
  /** Span in the scanned text, for ordering (rightmost first) and anchoring. */
  start: number;
  end: number;
  kind: 'boxed' | 'tag' | 'latex' | 'plain';
  /** How a joined answer is reported (`1, 2` for `\boxed{1}, \boxed{2}`); `text` otherwise. */
  shown?: string;
  /** A plain number written with a decimal comma or thousands separators, already made canonical. */
  plainNumber?: string;
}

/** "28 %", "$28$ percent", "\boxed{28}\%": a percent sign or word right after a span. */
export function percentAfter(text: string, end: number): number {
  // cheap pre-check on the next non-space character before any regex work
  let i = end;
  while (i < end + 4 && (text.charCodeAt(i) === 32 || text.charCodeAt(i) === 10)) i++;
  const c = text[i];
  if (c !== '%' && c !== '\\' && c !== '$' && c !== 'p' && c !== 'P') return 0;
  const m = /^\s{0,3}(?:\$\s{0,3}|\\\)\s{0,3})?(?:\\?%|percentage\b|percent\b|pct\b)/i.exec(
    text.slice(end, end + 24),
  );
  return m ? m[0].length : 0;
}
