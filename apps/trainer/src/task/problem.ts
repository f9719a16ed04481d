/** One problem: a question and its ground-truth answer (the verifier's gold). */
export interface Problem {
  id: string;
  question: string;
  answer: string;
  /** The row's `data_source` (verl layout), when it has one. */
  dataSource?: string;
}

/** Training and held-out problems; disjoint by construction. */
export interface ProblemSplit {
  train: Problem[];
  heldOut: Problem[];
}
