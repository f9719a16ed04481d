import { createCharTokenizer, createGenerator, setEngineThreads } from '@agentrl/engine';
import { createExecutor, type Executor } from '@agentrl/executor';
import { verify as mathVerify } from '@agentrl/math-verify';
import {
  createNativeAdapter,
  createSglangAdapter,
  createVllmAdapter,
  type EngineAdapter,
} from '@agentrl/rollout';
import type { TrainConfig } from '../config/schema.js';
import { TrainerError } from '../errors.js';
import type { Environment } from './environment.js';
import { NativeTrainer } from './native-policy.js';
import { createTrainerLogprobScorer } from './on-policy.js';
import { probeTcp } from './probe.js';
import { checkPython } from './python-check.js';
import type { Verify } from './reward.js';

export interface EnvironmentOptions {
  /** Checkpoint to load the policy from (null = fresh seeded init). */
  initDir: string | null;
  /** Phase whose optimizer state to restore from initDir (resume only). */
  resumePhase?: 'sft' | 'rl' | undefined;
  /** false for eval: no optimizer, and an engine URL alone is enough. */
  trainable?: boolean;
}

/**
 * Builds the live parts of a run from the config: the executor (embedded pool, HTTP server or
 * Redis queue, checked before anything heavy starts), the char tokenizer, the native policy and
 * its in-process engine, or vLLM/SGLang servers for rollouts, and the verifier.
 */
export async function createEnvironment(cfg: TrainConfig, opts: EnvironmentOptions): Promise<Environment> {
  const executor = await openExecutor(cfg);
  try {
    if (cfg.threads > 0) setEngineThreads(cfg.threads);
    const tokenizer = createCharTokenizer();
    const trainable = opts.trainable ?? true;
    let policy: NativeTrainer | null = null;
    const engines: EngineAdapter[] = [];
    if (trainable || !cfg.engine.url) {
      policy = await NativeTrainer.create(cfg, {
        initDir: opts.initDir,
        vocabSize: tokenizer.vocabSize,
        eosTokenId: tokenizer.eosTokenId,
        ...(opts.resumePhase ? { resumePhase: opts.resumePhase } : {}),
      });
    }
    if (cfg.engine.url) {
      engines.push(
        cfg.engine.kind === 'sglang'
          ? createSglangAdapter({ baseUrl: cfg.engine.url })
          : createVllmAdapter({ baseUrl: cfg.engine.url, model: 'default' }),
      );
    } else {
      const generator = createGenerator(policy!.model, {
        decode: (ids) => tokenizer.decode(ids),
        batchInvariant: cfg.engine.batchInvariant,
        ...(cfg.engine.batchInvariant ? { scoreLogprobs: createTrainerLogprobScorer(policy!.model) } : {}),
      });
      // One batch for every live trajectory: the tiny model is bound by per-call overhead, not FLOPs.
      engines.push(createNativeAdapter({ generator, maxBatch: 1024, name: 'native' }));
    }
    const verify: Verify = (gold, response) => {
      const r = mathVerify(gold, response);
      return { correct: r.correct, extracted: r.extracted ?? null };
    };
    return {
      policy: trainable ? policy : null,
      engines,
      tokenizer,
      executor,
      verify,
      async syncWeights() {
        // In-process engines share the weights; servers get them from disk (not needed by default).
      },
      async close() {
        await Promise.allSettled(engines.map((e) => e.close()));
        await executor.close();
      },
    };
  } catch (err) {
    await executor.close();
    throw err;
  }
}

async function openExecutor(cfg: TrainConfig): Promise<Executor> {
  const url = cfg.executor.url;
  const limits = {
    timeoutMs: cfg.executor.timeoutMs,
    ...(cfg.executor.workers > 0 ? { concurrency: cfg.executor.workers } : {}),
  };
  if (!url) {
    checkPython(cfg.executor.python);
    return createExecutor({ mode: 'embedded', python: cfg.executor.python, ...limits });
  }
  const redis = /^rediss?:\/\//.test(url);
  const what = redis ? `Redis at ${url}` : `the executor server at ${url}`;
  const fix = redis
    ? 'start redis-server (and `agentrl executor worker` processes), or leave --executor unset for the embedded pool'
    : 'start it with `agentrl executor serve`, or leave --executor unset for the embedded pool';
  // A TCP probe first: one clear message, the same for HTTP and Redis URLs, before any client starts.
  const refused = await probeTcp(url);
  if (refused)
    throw new TrainerError(
      'EXECUTOR_UNREACHABLE',
      `executor: ${what} refused the connection (${refused}); ${fix}`,
    );
  const ex = await createExecutor({ mode: redis ? { redis: url } : { url }, ...limits });
  // One call, so a server without workers fails now, not as a tool error in every trajectory.
  const probe = await ex.run({ code: 'print(1)', timeoutMs: 10_000 });
  if (probe.status !== 'ok') {
    await ex.close();
    const why = probe.error?.message ?? (probe.stderr || probe.status);
    throw new TrainerError(
      'EXECUTOR_UNREACHABLE',
      `executor: ${what} accepted the connection but a probe call failed (${why}); ${fix}`,
    );
  }
  return ex;
}
