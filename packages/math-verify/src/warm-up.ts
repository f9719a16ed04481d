/**
 * The first call in a process pays for V8's lazy compilation of every function and regex it
 * reaches: tens of milliseconds (60 ms measured on a Math-Verify case that warm takes 1 ms), and
 * several times that on a loaded machine, which would spend the whole budget and turn a right
 * answer into `timeout`. So the first `verify` (or `extractAnswer`) first runs these pairs, one
 * per code path, outside any caller's budget. Tens of milliseconds, once per process (or worker).
 */
const PAIRS: readonly [string, string][] = [
  ['\\frac{1}{2}', 'We get $x = 0.5$, so the answer is \\boxed{\\dfrac12}.'],
  ['3', 'It is \\boxed{1}, \\boxed{2} or \\boxed{3}.'],
  ['\\tan^2(y)+1', '$\\sec^2(y)$'],
  ['x^2+2x+1', 'Final Answer: The final answer is $(x+1)^2$. I hope it is correct.'],
  ['\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}', '\\boxed{\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}}'],
  ['(-\\infty,-2)\\cup(3,\\infty)', 'answer: \\(x \\in (3,\\infty)\\cup(-\\infty,-2)\\)'],
  ['x \\in [-2,7]', '\\[ -2 \\le x \\le 7 \\]'],
  ['\\{-2, 2\\}', '<answer>\\pm 2</answer>'],
  ['28\\%', 'The answer is **28** percent, about 1,000.99€ in total, 答案是28。'],
  ['\\sqrt{2}', 'so x = √2 and $y = 5+5+1 = 11$'],
  ['55', '\\boxed{\\sum_{k=1}^{10} k = 55}'],
  ['\\frac{1}{3}', '\\boxed{0.333333\\text{ cm}^2}'],
  ['\\text{(C)}', 'Therefore $\\boxed{\\text{C}}$ is our answer.'],
  ['2x - y + 1 = 0', '\\boxed{y = 2x + 1}'],
  ['3\\frac{1}{2}', 'Then $a_3 = 2, a_{37} = 19$ and 0.\\overline{3} and 10^{10^{10}} and `7`'],
];

let warmed = false;

/** Runs the warm-up pairs once per process through `run`, before the first real call. */
export function warmUpOnce(run: (gold: string, response: string) => unknown): void {
  if (warmed) return;
  warmed = true;
  for (const [gold, response] of PAIRS) run(gold, response);
}
