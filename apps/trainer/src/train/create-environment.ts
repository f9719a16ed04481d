import { statSync } from 'node:fs';
import { join } from 'node:path';
import { createGenerator, deviceUnavailableReason, setEngineThreads } from '@agentrl/engine';
import { createNativeAdapter } from '@agentrl/engine-adapters';
import { createExecutor, type Executor } from '@agentrl/executor';
import { verify as mathVerify } from '@agentrl/math-verify';
import { createCommunicator } from '@agentrl/parallel';
import {
  CHATML_TEMPLATE,
  type ChatFormat,
  createChatFormat,
  createChatFormatForTokenizer,
  createPythonTool,
  createToolRegistry,
  type EngineAdapter,
  type ToolRegistry,
} from '@agentrl/rollout';
import type { TrainConfig } from '../config/schema.js';
import { TrainerError } from '../errors.js';
import { leadRollsOut } from './distributed-rollout.js';
import type { Environment } from './environment.js';
import { NativeTrainer } from './native-policy.js';
import { createTrainerLogprobScorer } from './on-policy.js';
import { probeTcp } from './probe.js';
import { checkPython } from './python-check.js';
import { connectRemoteEngines, syncRemoteWeights, weightsDirFor } from './remote-engines.js';
import type { Verify } from './reward.js';
import { PYTHON_TOOL_NAME } from './rollout-factory.js';
import { loadRunTokenizer, type RunTokenizer } from './tokenizer-source.js';

export interface EnvironmentOptions {
  /** Checkpoint to load the policy from (null = fresh seeded init). */
  initDir: string | null;
  /** Phase whose optimizer state to restore from initDir (resume only). */
  resumePhase?: 'sft' | 'rl' | undefined;
  /** false for eval: no optimizer, and an engine URL alone is enough. */
  trainable?: boolean;
  /** The run directory (the default place of weight syncs to SGLang servers). */
  runRoot?: string | undefined;
  /** Where start-up lines go (engine checks). */
  log?: ((line: string) => void) | undefined;
}

/**
 * Builds the live parts of a run from the config: the executor (embedded pool, HTTP server or
 * Redis queue, checked before anything heavy starts), the char tokenizer, the native policy and
 * its in-process engine, or vLLM/SGLang servers for rollouts, and the verifier.
 */
export async function createEnvironment(cfg: TrainConfig, opts: EnvironmentOptions): Promise<Environment> {
  const trainable = opts.trainable ?? true;
  // Before the executor, the data or any weights: a GPU that cannot run stops the run at once.
  if (trainable || !cfg.engine.url) assertDeviceRuns(cfg.device);
  const executor = await openExecutor(cfg);
  try {
    if (cfg.threads > 0) setEngineThreads(cfg.threads);
    const runTokenizer = await loadRunTokenizer(cfg, opts.initDir);
    const tokenizer = runTokenizer.tokenizer;
    let policy: NativeTrainer | null = null;
    const engines: EngineAdapter[] = [];
    if (trainable || !cfg.engine.url) {
      policy = await NativeTrainer.create(cfg, {
        initDir: opts.initDir,
        tokenizer: runTokenizer,
        trainable,
        ...(opts.resumePhase ? { resumePhase: opts.resumePhase } : {}),
      });
    }
    const tools = createToolRegistry([
      createPythonTool(executor, { name: PYTHON_TOOL_NAME, timeoutMs: cfg.executor.timeoutMs }),
    ]);
    const chatFormat = chatFormatFor(cfg, runTokenizer, tools);
    // With --engine under mpirun, rank 0 alone talks to the servers (distributed-rollout.ts): the
    // other ranks open no connection and keep the in-process engine, which they never roll out on.
    const comm = createCommunicator();
    const follower = cfg.engine.url && trainable && leadRollsOut(cfg, comm) && comm.rank !== 0;
    const remote = cfg.engine.url && !follower ? await connectRemoteEngines(cfg, tokenizer, opts.log) : [];
    // A trainable run writes the policy for the servers after every update: check where first.
    const weightsDir = remote.length && trainable ? weightsDirFor(cfg, opts.runRoot ?? null) : null;
    let synced: number | null = null;
    if (remote.length) {
      engines.push(...remote);
    } else {
      // On a GPU the KV-cache prefill, decode and sampling run on the device (sampleToken's rules,
      // each request's own stream): only tokens and logprobs come back. The device has no
      // batch-invariant panel path and no hidden-state output to rescore, so no scorer there: the
      // recorded logprobs are the device's, and rolloutTrainLogprobMaxAbsDiff shows how far they drift.
      const onCpu = policy!.model.device === 'cpu';
      const generator = createGenerator(policy!.model, {
        decode: (ids) => tokenizer.decode(ids),
        batchInvariant: cfg.engine.batchInvariant,
        ...(cfg.engine.batchInvariant && onCpu
          ? { scoreLogprobs: createTrainerLogprobScorer(policy!.model) }
          : {}),
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
      tokenizerDir: runTokenizer.dir,
      chatFormat,
      tools,
      executor,
      verify,
      remote: remote.length > 0 || Boolean(follower),
      async syncWeights(version: number) {
        // In-process engines share the policy's weights: nothing to send.
        if (!policy || weightsDir === null || synced === version) return;
        const p = policy;
        await syncRemoteWeights(remote, cfg, weightsDir, version, (d) => p.saveWeights(d));
        synced = version;
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

/**
 * Stops when a model directory given on the command line is not there, naming the directory and
 * the option it came from (otherwise the first file read from it, the tokenizer, takes the blame).
 */
export function assertModelDir(dir: string, option: string): void {
  const stat = statSync(dir, { throwIfNoEntry: false });
  if (!stat?.isDirectory())
    throw new TrainerError(
      'CHECKPOINT',
      `model: ${dir} (${option}) ${stat ? 'is a file, not a directory' : 'does not exist'}; point ${option} at a checkpoint directory (config.json + model.safetensors, as runs/<name>/checkpoints/<tag> or a Hugging Face download)`,
    );
}

/**
 * Stops a run whose `--device` cannot run the engine here, naming the device, listBackends()'
 * reason and the way out (`--device cpu`).
 */
export function assertDeviceRuns(device: TrainConfig['device']): void {
  const why = deviceUnavailableReason(device);
  if (why === undefined) return;
  throw new TrainerError(
    'DEPENDENCY',
    `--device ${device} cannot run the engine here: ${why}. Use --device cpu, or run on a machine with ${device === 'cuda' ? 'an NVIDIA GPU, its driver and agentrl_cuda.so' : 'an AMD GPU, ROCm and agentrl_hip.so'}`,
  );
}

/**
 * The chat layout of the run. The byte tokenizer gets ChatML with no tool list (the task's short
 * system message describes the tool: a char-level model pays for every character of a prompt in
 * every rollout). An HF tokenizer gets its own chat template, rendered as transformers'
 * `apply_chat_template(messages, tools=[python], add_generation_prompt=True, **chatTemplateKwargs)`.
 */
function chatFormatFor(cfg: TrainConfig, t: RunTokenizer, tools: ToolRegistry): ChatFormat {
  if (t.dir === null) return createChatFormat({ template: CHATML_TEMPLATE });
  try {
    return createChatFormatForTokenizer(t.tokenizer, {
      tools: tools.schemas(),
      templateKwargs: cfg.model.chatTemplateKwargs,
    });
  } catch (cause) {
    throw new TrainerError(
      'CHECKPOINT',
      `tokenizer: ${join(t.dir, 'tokenizer_config.json')}: ${(cause as Error).message}`,
      { cause },
    );
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
