/**
 * Hard bounds that keep each step's work small whatever the input. Together with the deadline
 * they make the cost of one `verify` call bounded: extraction is linear in the scanned tail, and
 * parsing and evaluation only ever see bounded answers.
 */
export const LIMITS = {
  /** Only the last this many characters of a response are scanned for an answer. */
  maxScanChars: 24_000,
  /** A candidate answer longer than this is compared as a string only, never parsed. */
  maxAnswerChars: 1_200,
  /** Tokens in one answer. */
  maxTokens: 600,
  /** Nesting depth of the parser (braces, parentheses, fractions). */
  maxDepth: 40,
  /** Elements of a list, set or tuple; cells of a matrix. */
  maxItems: 64,
  /** `\pm` occurrences expanded into alternatives (2^n branches). */
  maxPlusMinus: 3,
  /** Exact integer powers only while the result stays below this many bits; floats past it. */
  maxExactBits: 4_096,
  /** Candidates parsed per call, best first; a flood of formulas cannot make a call slow. */
  maxCandidates: 48,
  /** Boxed answers joined into one multi-answer. */
  maxJoined: 12,
} as const;
