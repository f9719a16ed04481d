import { z } from 'zod';

/**
 * The whole trainer configuration: one zod schema, `.describe()` on every field (the CLI's `--help`
 * is generated from these descriptions, so every option is documented by construction), defaults
 * from the tiny preset, the type inferred. Hyper-parameters default to rStar2-Agent's (ARCHITECTURE.md)
 * scaled to a tiny char-level model.
 */
const int = () => z.number().int();
const pos = () => z.number().int().positive();

export const ModelConfigSchema = z
  .strictObject({
    init: z
      .string()
      .nullable()
      .default(null)
      .describe('checkpoint directory to start from (HF safetensors + config.json); null = random init'),
    tokenizer: z
      .string()
      .nullable()
      .default(null)
      .describe(
        "Hugging Face tokenizer directory (tokenizer.json, tokenizer_config.json with its chat_template); null = the init checkpoint's own, or the byte tokenizer when init is null",
      ),
    chatTemplateKwargs: z
      .record(z.string(), z.unknown())
      .default({})
      .describe(
        'extra chat-template variables, as transformers\' apply_chat_template kwargs (e.g. {"enable_thinking": false} for Qwen3)',
      ),
    architecture: z
      .enum(['qwen3', 'llama'])
      .default('qwen3')
      .describe(
        'layout of a fresh model: qwen3 (RMS-normed queries and keys) or llama (plain); unused with init, which brings its own',
      ),
    qkNormInit: z
      .number()
      .positive()
      .default(1)
      .describe(
        "initial gain of a fresh qwen3 model's query and key RMSNorms (HF initialises them to 1): the attention logits of a head are bounded by head_dim^0.5 times its square",
      ),
    hiddenSize: pos().default(64).describe('width of the residual stream'),
    numLayers: pos().default(2).describe('transformer blocks'),
    numHeads: pos().default(2).describe('attention heads'),
    numKvHeads: pos().default(2).describe('key/value heads (grouped-query attention)'),
    intermediateSize: pos().default(192).describe('SwiGLU MLP width'),
    maxPositions: pos().default(1024).describe('longest sequence the model is built for'),
    ropeTheta: z.number().positive().default(10000).describe('RoPE base'),
    initStd: z
      .number()
      .positive()
      .nullable()
      .default(null)
      .describe(
        "std of the normal init of a fresh model's matrices and embeddings (HF initializer_range); null = 0.8 / sqrt(hiddenSize), 0.1 at the tiny width (HF's 0.02 suits widths of 1-4K: it starts a 64-wide model 6x below a fan-in init, and its copy circuit forms late or never); unused with init",
      ),
    tieEmbeddings: z.boolean().default(true).describe('share the token embedding and lm_head'),
  })
  .describe(
    'the policy model (a tiny Qwen-style decoder with the byte tokenizer unless init or tokenizer is set)',
  );

export const TaskConfigSchema = z
  .strictObject({
    kind: z
      .enum(['multiply', 'files'])
      .default('multiply')
      .describe('multiply = the synthetic task; files = dataset files (task.trainFiles / task.evalFiles)'),
    digits: z
      .tuple([pos(), pos()])
      .default([3, 3])
      .describe('digits of the two factors of the synthetic multiplication task'),
    zeroPadShare: z
      .number()
      .min(0)
      .max(1)
      .default(0)
      .describe(
        "share of synthetic problems with one factor written zero-padded (0427 * 318): copied literally it is a Python SyntaxError, int('0427') parses it (the roc preset's task)",
      ),
    trainSize: pos().default(2000).describe('synthetic training problems'),
    heldOutSize: pos().default(200).describe('synthetic held-out problems (disjoint from training)'),
    trainFiles: z
      .array(z.string())
      .default([])
      .describe('jsonl/parquet training rows: {prompt, reward_model.ground_truth} or {question, answer}'),
    evalFiles: z.array(z.string()).default([]).describe('jsonl/parquet held-out rows, same layouts'),
    reward: z
      .enum(['auto', 'boxed-integer', 'boxed', 'any', 'rstar'])
      .default('auto')
      .describe(
        'what earns reward 1: the last \\boxed{} verified against the gold (boxed), and an integer literal (boxed-integer), math-verify on the whole response (any), or rStar2-Agent\'s DAPO/AIME reward: the answer after the last "Answer:" or in the last \\boxed{}, else math-verify on the whole response (rstar); auto = boxed-integer for multiply, boxed for files',
      ),
    systemPrompt: z
      .string()
      .nullable()
      .default(null)
      .describe('system message; null = the built-in one that describes the python tool'),
  })
  .describe('what the model is trained and evaluated on');

export const SftConfigSchema = z
  .strictObject({
    enabled: z.boolean().default(true).describe('run the non-reasoning SFT cold start'),
    files: z
      .array(z.string())
      .default([])
      .describe(
        'jsonl/parquet SFT transcripts in the messages format ({"messages": [system?, user, assistant, tool, assistant, ...]}, tool_calls allowed); empty = demonstrations generated for multiplication problems',
      ),
    examples: pos()
      .default(2000)
      .describe('demonstrations generated from the training split (sft.files are used whole)'),
    steps: int().nonnegative().default(1000).describe('optimizer steps of SFT'),
    batchSize: pos().default(16).describe('demonstrations per SFT step'),
    checkpointEvery: int()
      .nonnegative()
      .default(200)
      .describe(
        'write a checkpoint every k SFT steps (0 = only at the end of SFT); --resume after a kill during SFT continues from the newest one (only the newest SFT checkpoint is kept)',
      ),
    lr: z.number().positive().default(3e-3).describe('SFT peak learning rate'),
    warmupSteps: int().nonnegative().default(20).describe('SFT linear warm-up steps'),
    beta2: z
      .number()
      .min(0)
      .lt(1)
      .default(0.9)
      .describe(
        'AdamW beta2 of SFT; short memory lets the small copy signal through once the format is learned',
      ),
    maskDirectAnswers: z
      .boolean()
      .default(true)
      .describe(
        'no loss on the digits of answers given without the tool (unlearnable for the model; format only)',
      ),
    mix: z
      .strictObject({
        tool: z.number().min(0).default(0.3).describe('share of clean tool-use demonstrations'),
        noTool: z
          .number()
          .min(0)
          .default(0.55)
          .describe('share answered without the tool (a guessed answer the model cannot learn)'),
        toolErrorFixed: z
          .number()
          .min(0)
          .default(0.15)
          .describe('share whose first tool call fails and is corrected in a later turn'),
      })
      .prefault({})
      .describe('mixture of demonstration kinds (normalised to sum to 1)'),
  })
  .describe('stage 0: format-only supervised cold start');

export const RlStageSchema = z
  .strictObject({
    name: z.string().min(1).describe('stage name, used in metrics and checkpoints'),
    steps: int().nonnegative().describe('RL steps in this stage'),
    maxResponseTokens: pos().describe('token budget of the whole response (all turns) in this stage'),
    hardOnly: z
      .boolean()
      .default(false)
      .describe('train only on problems not solved by every sample when the stage starts'),
  })
  .describe('one RL stage');

export const RlConfigSchema = z
  .strictObject({
    stages: z
      .array(RlStageSchema)
      .min(1)
      .default([
        { name: 'stage1', steps: 20, maxResponseTokens: 160, hardOnly: false },
        { name: 'stage2', steps: 20, maxResponseTokens: 256, hardOnly: false },
        { name: 'stage3', steps: 10, maxResponseTokens: 256, hardOnly: true },
      ])
      .describe(
        'RL stages in order, with growing maximum response length; the last on still-failed problems',
      ),
    promptsPerStep: pos().default(16).describe('prompts per RL step'),
    n: pos().default(8).describe('trajectories kept per prompt (the group size trained on)'),
    oversample: pos().default(16).describe('trajectories sampled per prompt before RoC (N >= n)'),
    roc: z
      .boolean()
      .default(true)
      .describe('Resample-on-Correct down-sampling; false = plain GRPO on n samples'),
    minPositives: int()
      .nonnegative()
      .default(2)
      .describe('RoC: keep at least this many positives when available'),
    minNegatives: int()
      .nonnegative()
      .default(2)
      .describe('RoC: keep at least this many negatives when available'),
    rejectEqualReward: z.boolean().default(true).describe('drop groups whose rewards are all equal'),
    normalizeStd: z.boolean().default(true).describe('divide advantages by the group std (false = Dr. GRPO)'),
    lr: z.number().positive().default(1e-3).describe('RL learning rate (constant after warm-up)'),
    warmupSteps: int().nonnegative().default(2).describe('RL linear warm-up steps'),
    weightDecay: z.number().min(0).default(0).describe('AdamW decoupled weight decay'),
    beta2: z.number().min(0).lt(1).default(0.99).describe('AdamW beta2 of RL'),
    gradClip: z.number().positive().default(1).describe('global grad-norm clip'),
    clipLow: z.number().min(0).default(0.2).describe('PPO clip ratio below 1'),
    clipHigh: z.number().min(0).default(0.28).describe('PPO clip ratio above 1 (clip-higher)'),
    dualClip: z.number().gt(1).default(3).describe('dual-clip constant c for negative advantages'),
    aggregation: z
      .enum(['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'])
      .default('token-mean')
      .describe('loss aggregation'),
    temperature: z.number().positive().default(1).describe('sampling temperature of rollouts'),
    topP: z.number().gt(0).max(1).default(1).describe('nucleus sampling mass of rollouts'),
    presencePenalty: z
      .number()
      .min(-2)
      .max(2)
      .default(0)
      .describe(
        "presence penalty of rollouts (vLLM's); recorded logprobs stay the model's, before penalties",
      ),
    frequencyPenalty: z
      .number()
      .min(-2)
      .max(2)
      .default(0)
      .describe(
        "frequency penalty of rollouts (vLLM's); recorded logprobs stay the model's, before penalties",
      ),
    maxTurns: pos().default(5).describe('most assistant turns per trajectory'),
    maxTurnTokens: pos().default(96).describe('most new tokens per assistant turn'),
    toolResponseMaxChars: pos().default(200).describe('tool output kept (truncated in the middle)'),
    microBatchTokens: pos().default(4096).describe('token budget of one packed training micro-batch'),
  })
  .describe('GRPO-RoC stages');

export const EvalConfigSchema = z
  .strictObject({
    k: pos().default(4).describe('samples per problem; pass@1 is averaged over them (avg@k)'),
    temperature: z.number().min(0).default(0.6).describe('sampling temperature of eval'),
    problems: pos().default(200).describe('held-out problems evaluated (the first ones)'),
    everySteps: int()
      .nonnegative()
      .default(10)
      .describe('evaluate during RL every k steps (0 = only start/end)'),
    maxResponseTokens: pos().default(256).describe('response token budget in eval'),
  })
  .describe('held-out evaluation (avg@k pass@1)');

export const ExecutorConfigSchema = z
  .strictObject({
    url: z
      .string()
      .nullable()
      .default(null)
      .describe(
        'null = embedded pool; http(s)://host:port = executor server; redis://... = distributed queue',
      ),
    python: z.string().default('python3').describe('Python interpreter of the embedded pool'),
    timeoutMs: pos().default(5000).describe('wall-clock limit of one tool call'),
    workers: int().nonnegative().default(0).describe('embedded pool size (0 = sized to the machine)'),
  })
  .describe('the code environment');

export const EngineConfigSchema = z
  .strictObject({
    url: z
      .string()
      .nullable()
      .default(null)
      .describe(
        'null = native in-process engine; otherwise vLLM/SGLang server base URLs for rollouts, comma-separated (URL[,URL...])',
      ),
    kind: z.enum(['vllm', 'sglang']).default('vllm').describe('server kind when engine.url is set'),
    model: z
      .string()
      .nullable()
      .default(null)
      .describe(
        'served model name (--served-model-name); null = the one model the server lists at /v1/models',
      ),
    weightsDir: z
      .string()
      .nullable()
      .default(null)
      .describe(
        'directory the trainer writes updated weights to for the servers to load after every update (vLLM: the directory the server was launched on; SGLang: any path it can read); null = <run>/engine-weights (SGLang only)',
      ),
    retries: pos()
      .default(5)
      .describe('tries of a request or weight sync a server did not accept, with capped backoff'),
    maxFailedFraction: z
      .number()
      .min(0)
      .max(1)
      .default(0.5)
      .describe(
        "stop the run when more than this share of a step's trajectories failed in the engine (after retries)",
      ),
    batchInvariant: z
      .boolean()
      .default(true)
      .describe(
        "in-process engine: a token's logprob does not depend on the other sequences of its decode step, and the recorded logprobs equal the trainer's (false: the batch-dependent GEMM path)",
      ),
  })
  .describe('where rollouts are generated');

export const ParallelConfigSchema = z
  .strictObject({
    bucketMb: z
      .number()
      .positive()
      .max(4096)
      .default(25)
      .describe(
        "MiB of gradient (float64 accumulator; fp32 for GPU ranks with exact: false) per all-reduce bucket under mpirun (PyTorch DDP's 25 by default); a larger parameter gets a bucket of its own",
      ),
    overlap: z
      .boolean()
      .default(true)
      .describe(
        "start each bucket's all-reduce as soon as the last micro-batch's backward has finished it (CPU ranks: on MPI's comm thread; GPU ranks: ncclAllReduce on a side stream); false: every bucket after the backward",
      ),
    exact: z
      .boolean()
      .default(true)
      .describe(
        'GPU ranks: reduce a float64 gradient accumulator on the device, so any number of ranks ends with the same bits (8 bytes per parameter); false: NCCL/RCCL sums the fp32 gradients in place (no extra memory, the sum in NCCL order). CPU ranks always reduce float64',
      ),
  })
  .describe('data-parallel gradients under mpirun (no effect in a single process)');

export const TrainConfigSchema = z
  .strictObject({
    name: z
      .string()
      .max(128, 'at most 128 characters')
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
        'use letters, digits, dot, dash and underscore, starting with a letter or digit (no ".", "..", "/" or "\\": the name is one folder under runsDir)',
      )
      .default('tiny')
      .describe('run name: outputs go to <runsDir>/<name>/'),
    runsDir: z.string().default('runs').describe('folder that holds run directories'),
    seed: int().default(1).describe('seed of every random stream (data split, order, sampling, init)'),
    threads: int().nonnegative().default(0).describe('native compute threads (0 = all cores)'),
    device: z
      .enum(['cpu', 'cuda', 'rocm'])
      .default('cpu')
      .describe(
        "where the policy's weights, gradients, optimizer state and activations live, and where the in-process engine decodes: cpu, cuda (an NVIDIA GPU) or rocm (an AMD GPU); a GPU device that cannot run here stops the run at start",
      ),
    precision: z
      .enum(['fp32', 'bf16'])
      .default('fp32')
      .describe(
        'matrix products of the policy on a GPU device: fp32, or bf16 (inputs rounded to bf16 on tensor cores, fp32 accumulation, fp32 master weights in AdamW); bf16 needs --device cuda or rocm',
      ),
    checkpointEvery: int()
      .nonnegative()
      .default(10)
      .describe('write a checkpoint every k RL steps (0 = end only)'),
    progress: z.boolean().default(true).describe('terminal progress bar (off when stdout is not a TTY)'),
    model: ModelConfigSchema.prefault({}),
    task: TaskConfigSchema.prefault({}),
    sft: SftConfigSchema.prefault({}),
    rl: RlConfigSchema.prefault({}),
    eval: EvalConfigSchema.prefault({}),
    executor: ExecutorConfigSchema.prefault({}),
    engine: EngineConfigSchema.prefault({}),
    parallel: ParallelConfigSchema.prefault({}),
  })
  .superRefine((cfg, ctx) => {
    if (cfg.precision === 'bf16' && cfg.device === 'cpu') {
      ctx.addIssue({
        code: 'custom',
        path: ['precision'],
        message:
          'bf16 runs on a GPU device only (the CPU engine computes in fp32): add --device cuda or --device rocm, or leave --precision at fp32',
      });
    }
  })

  .describe('agentrl train configuration');

export type TrainConfig = z.infer<typeof TrainConfigSchema>;
export type TrainConfigInput = z.input<typeof TrainConfigSchema>;
export type RlStage = z.infer<typeof RlStageSchema>;
