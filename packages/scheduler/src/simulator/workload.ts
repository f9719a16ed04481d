import { Rng } from '@agentrl/protocol';

/** Shape of the simulated rollout step; every figure is an assumption stated in BENCHMARKS.md. */
export interface WorkloadConfig {
  trajectories: number;
  seed: number;
  promptTokens: [number, number];
  /** Token budget after the prompt (rStar2-Agent stage 1: 8K). */
  maxResponseTokens: number;
  maxTurns: number;
  /** Probability that a turn calls a tool (and another turn follows). */
  toolCallProbability: number;
  /** Lognormal median / sigma of a tool-calling turn's length in tokens. */
  toolTurnTokens: [number, number];
  /** Lognormal median / sigma of the final answer turn's length in tokens. */
  answerTurnTokens: [number, number];
  /** Lognormal median / sigma of a tool response's length in tokens (after truncation cap). */
  toolResponseTokens: [number, number];
  toolResponseMaxTokens: number;
  /** Lognormal median / sigma of tool latency in seconds, capped at the sandbox timeout. */
  toolLatencySeconds: [number, number];
  toolTimeoutSeconds: number;
}

export interface TrajectorySpec {
  promptTokens: number;
  turns: Array<{ generate: number; tool: { seconds: number; responseTokens: number } | null }>;
}

export const DEFAULT_WORKLOAD: Omit<WorkloadConfig, 'trajectories' | 'seed'> = {
  promptTokens: [150, 500],
  maxResponseTokens: 8192,
  maxTurns: 5,
  toolCallProbability: 0.6,
  toolTurnTokens: [300, 0.9],
  answerTurnTokens: [700, 1.1],
  toolResponseTokens: [80, 0.9],
  toolResponseMaxTokens: 1024,
  toolLatencySeconds: [0.4, 1.0],
  toolTimeoutSeconds: 30,
};

/** Draws the step's trajectories: heavy-tailed turn counts, turn lengths and tool latencies. */
export function generateWorkload(config: WorkloadConfig): TrajectorySpec[] {
  const rnd = Rng.derive(config.seed, 'workload');
  return Array.from({ length: config.trajectories }, () => {
    const promptTokens = rnd.int(config.promptTokens[0], config.promptTokens[1]);
    const turns: TrajectorySpec['turns'] = [];
    let budget = config.maxResponseTokens;
    for (let t = 0; t < config.maxTurns && budget > 0; t++) {
      const callsTool = t < config.maxTurns - 1 && rnd.next() < config.toolCallProbability;
      const [median, sigma] = callsTool ? config.toolTurnTokens : config.answerTurnTokens;
      const generate = Math.max(1, Math.min(budget, Math.round(rnd.lognormal(median, sigma))));
      budget -= generate;
      if (!callsTool || budget <= 0) {
        turns.push({ generate, tool: null });
        break;
      }
      const responseTokens = Math.min(
        budget,
        config.toolResponseMaxTokens,
        Math.round(rnd.lognormal(config.toolResponseTokens[0], config.toolResponseTokens[1])),
      );
      budget -= responseTokens;
      const seconds = Math.min(
        config.toolTimeoutSeconds,
        rnd.lognormal(config.toolLatencySeconds[0], config.toolLatencySeconds[1]),
      );
      turns.push({ generate, tool: { seconds, responseTokens } });
    }
    return { promptTokens, turns };
  });
}

/**
 * Plays one trajectory's turns on its engine: each turn generates on top of the cached context, then
 * waits for its tool call (`tool` resolves when the call's result is back). Returns the final
 * context length; `onGenerated` sees each turn's token count.
 */
export async function playTrajectory(
  engine: {
    generate(r: { contextTokens: number; cachedTokens: number; generateTokens: number }): Promise<void>;
  },
  spec: TrajectorySpec,
  tool: (call: { seconds: number; responseTokens: number }) => Promise<void>,
  onGenerated: (tokens: number) => void = () => {},
): Promise<number> {
  let context = spec.promptTokens;
  let cached = 0;
  for (const turn of spec.turns) {
    await engine.generate({ contextTokens: context, cachedTokens: cached, generateTokens: turn.generate });
    context += turn.generate;
    onGenerated(turn.generate);
    cached = context;
    if (turn.tool) {
      await tool(turn.tool);
      context += turn.tool.responseTokens;
    }
  }
  return context;
}
