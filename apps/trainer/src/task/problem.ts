/** One problem: a question and its ground-truth answer (the verifier's gold). */
export interface Problem {
  id: string;
  question: string;
  answer: string;
}

/** Training and held-out problems; disjoint by construction. */
export interface ProblemSplit {
  train: Problem[];
  heldOut: Problem[];
}
