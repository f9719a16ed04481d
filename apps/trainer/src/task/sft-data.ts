import type { ChatMessage, ToolOutcome } from '@agentrl/protocol';
import { Rng } from '@agentrl/protocol';
import { buildPrompt, toolCallText } from './chat-format.js';
import { parseFactors, zeroPadded } from './multiply.js';
import type { Problem } from './problem.js';

/** The three kinds of cold-start demonstration; see the README for why the mix is deliberately imperfect. */
export type DemoKind = 'tool' | 'noTool' | 'toolErrorFixed';

export interface SftDemo {
  problemId: string;
  /** A generated kind, or `transcript` for a row of `sft.files`. */
  kind: DemoKind | 'transcript';
  /** system, user, then alternating assistant / tool-response turns; loss on assistant turns only. */
  messages: ChatMessage[];
  /** For `noTool`: the answer text inside the final \\boxed{}, which a tiny model cannot learn to produce. */
  directAnswer?: string;
}

export interface SftDataOptions {
  seed: number;
  examples: number;
  mix: { tool: number; noTool: number; toolErrorFixed: number };
  systemPrompt: string | null;
  /** Runs one snippet in the real code environment, so tool responses are exactly what RL will see. */
  runTool: (code: string) => Promise<ToolOutcome>;
  /** Formats an outcome as the text inside a tool-response turn (the rollout's formatter). */
  renderToolResponse: (outcome: ToolOutcome) => string;
}

/** Three deliberately broken first attempts, each fixed by the next call (as in the reference's traces). */
const BROKEN_CALLS = [
  (a: string, b: string) => `print(${a} x ${b})`,
  (_a: string, _b: string) => 'print(a * b)',
  (a: string, b: string) => `print(${a} * ${b}`,
];

/** A factor as Python code: the literal, or `int('0427')` when a leading zero makes the literal invalid. */
const parsed = (factor: string) => (zeroPadded(factor) ? `int('${factor}')` : factor);

/**
 * Builds the non-reasoning SFT set for the multiplication task (other problems are left out; an
 * empty list when there are none: real data brings its transcripts in `sft.files`): format only (tool-call JSON, reading the tool response, a boxed
 * final answer). Mixed quality on purpose: `noTool` answers the product directly, which a tiny model
 * cannot learn to do, so the SFT policy is right only when it happens to pick the tool, and RL has
 * room to make the tool the habit; `toolErrorFixed` shows a failing call corrected in a later turn,
 * which RoC should learn to avoid reproducing. On zero-padded problems (the `roc` preset) the clean
 * call parses the padded factor (`int('0427') * 318`), and the failing first call is the literal
 * copy (`0427 * 318`), a real SyntaxError, rather than a deliberately broken one.
 */
export async function buildSftDemos(problems: readonly Problem[], opts: SftDataOptions): Promise<SftDemo[]> {
  const rng = Rng.derive(opts.seed, 'sft-data');
  const total = opts.mix.tool + opts.mix.noTool + opts.mix.toolErrorFixed;
  if (!(total > 0)) throw new Error('sft.mix: the shares must not all be 0');
  // Exact shares (largest remainder), then shuffled: the mix is what the config says, not a coin flip.
  const shares: [DemoKind, number][] = [
    ['tool', opts.mix.tool / total],
    ['noTool', opts.mix.noTool / total],
    ['toolErrorFixed', opts.mix.toolErrorFixed / total],
  ];
  const counts = shares.map(([, s]) => Math.floor(s * opts.examples));
  const byRemainder = shares
    .map(([, s], i) => [s * opts.examples - counts[i]!, i] as const)
    .sort((a, b) => b[0] - a[0]);
  for (let r = 0; counts.reduce((a, b) => a + b, 0) < opts.examples; r++) counts[byRemainder[r]![1]]!++;
  const kinds = rng.shuffle(shares.flatMap(([kind], i) => Array<DemoKind>(counts[i]!).fill(kind)));
  // Only multiplication problems get demonstrations: for any other problem the generator has no
  // tool call to show, and a bare `\boxed{answer}` would teach nothing but the format.
  const usable = problems.filter((p) => parseFactors(p.question) !== null);
  if (usable.length === 0) return [];
  const demos: SftDemo[] = [];
  for (let i = 0; i < opts.examples; i++) {
    const problem = usable[i % usable.length]!;
    const factors = parseFactors(problem.question)!;
    const kind = kinds[i]!;
    const messages = buildPrompt(problem, opts.systemPrompt);
    if (kind === 'noTool') {
      messages.push({ role: 'assistant', content: `\\boxed{${problem.answer}}` });
    } else {
      const [a, b] = factors;
      const padded = zeroPadded(a) || zeroPadded(b);
      if (kind === 'toolErrorFixed') {
        // A zero-padded factor copied as written fails for real (SyntaxError); else a broken call.
        const broken = padded ? `print(${a} * ${b})` : rng.pick(BROKEN_CALLS)(a, b);
        messages.push({ role: 'assistant', content: toolCallText(broken) });
        messages.push({ role: 'user', content: opts.renderToolResponse(await opts.runTool(broken)) });
      }
      const code = `print(${parsed(a)} * ${parsed(b)})`;
      messages.push({ role: 'assistant', content: toolCallText(code) });
      const outcome = await opts.runTool(code);
      messages.push({ role: 'user', content: opts.renderToolResponse(outcome) });
      messages.push({ role: 'assistant', content: `\\boxed{${outcome.stdout.trim() || problem.answer}}` });
    }
    demos.push({
      problemId: problem.id,
      kind,
      messages,
      ...(kind === 'noTool' ? { directAnswer: problem.answer } : {}),
    });
  }
  return demos;
}
