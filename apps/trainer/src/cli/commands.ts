import type { CommandFlag } from './args.js';

/** Flags of `agentrl train` that are not plain config leaves. */
export const TRAIN_FLAGS: CommandFlag[] = [
  { name: 'config', value: 'file', description: 'YAML or JSON config, applied over the preset' },
  {
    name: 'preset',
    value: 'name',
    description: 'start from a named preset (tiny = default, smoke = CI, roc = the RoC ablation task)',
  },
  {
    name: 'resume',
    value: 'run-dir',
    description: 'continue runs/<name> from its latest checkpoint (same config, same metrics)',
  },
  { name: 'overwrite', description: 'replace an existing run directory of the same name' },
  {
    name: 'no-roc',
    description: 'plain GRPO ablation: sample rl.n per prompt, no Resample-on-Correct',
    sets: { path: 'rl.roc', value: false },
  },
  {
    name: 'engine',
    value: 'url[,url...]',
    description:
      'vLLM/SGLang servers for rollouts, weights synced after every update (shorthand of --engine.url; see engine.*)',
    sets: { path: 'engine.url' },
  },
  {
    name: 'executor',
    value: 'url',
    description: 'executor server http(s)://… or redis://… (shorthand of --executor.url)',
    sets: { path: 'executor.url' },
  },
  {
    name: 'name',
    value: 'run-name',
    description: 'run name (shorthand of the name option)',
    sets: { path: 'name' },
  },
  {
    name: 'seed',
    value: 'int',
    description: 'seed of every random stream (shorthand of the seed option)',
    sets: { path: 'seed' },
  },
  {
    name: 'stop-after',
    value: 'steps',
    description: 'stop after this many RL steps (for tests of --resume); the run can be resumed',
  },
  { name: 'print-config', description: 'print the resolved config as JSON and exit' },
];

/** Flags of `agentrl eval`. Config options also apply (model shape, eval.*, executor.*, task.*). */
export const EVAL_FLAGS: CommandFlag[] = [
  {
    name: 'checkpoint',
    value: 'dir',
    description: 'checkpoint to evaluate (a runs/<name> dir takes its latest)',
  },
  {
    name: 'engine',
    value: 'url',
    description: 'evaluate a vLLM/SGLang server instead of a checkpoint',
    sets: { path: 'engine.url' },
  },
  {
    name: 'data',
    value: 'file',
    description: 'jsonl/parquet dataset file (repeatable); default: the held-out split',
    repeatable: true,
  },
  {
    name: 'config',
    value: 'file',
    description: 'YAML or JSON config (task split, eval and executor options)',
  },
  { name: 'preset', value: 'name', description: 'preset the task split comes from (default tiny)' },
  {
    name: 'executor',
    value: 'url',
    description: 'executor server http(s)://… or redis://…',
    sets: { path: 'executor.url' },
  },
  {
    name: 'k',
    value: 'int',
    description: 'samples per problem (shorthand of --eval.k)',
    sets: { path: 'eval.k' },
  },
  { name: 'out', value: 'file', description: 'also write the result (and per-problem scores) as JSON here' },
];

/** Flags of `agentrl executor serve|worker` (handed to @agentrl/executor's CLI). */
export const SERVE_FLAGS: CommandFlag[] = [
  { name: 'host', value: 'addr', description: 'listen address (default 127.0.0.1)' },
  { name: 'port', value: 'int', description: 'listen port (default 8090)' },
  {
    name: 'redis',
    value: 'url',
    description: 'serve: queue calls in this Redis for workers; worker: take calls from it',
  },
  { name: 'prefix', value: 'str', description: 'Redis key prefix (default agentrl:exec:)' },
  { name: 'batch-size', value: 'int', description: 'worker: calls taken per batch (default 64)' },
  {
    name: 'visibility-ms',
    value: 'int',
    description: 'worker: a batch not acknowledged in this time is retaken (default 30000)',
  },
  {
    name: 'max-pending',
    value: 'int',
    description: 'serve: calls accepted at most; more are refused with 504 (default 100000)',
  },
  {
    name: 'lease-ms',
    value: 'int',
    description: "serve --redis: a killed server's queued calls are dropped after this long (default 15000)",
  },
  {
    name: 'reap-after-ms',
    value: 'int',
    description: 'worker: dead workers silent this long leave the consumer group (default 2 x visibility)',
  },
  {
    name: 'connect-timeout-ms',
    value: 'int',
    description: 'with --redis: fail if Redis does not answer within this (default 5000)',
  },
  { name: 'concurrency', value: 'int', description: 'calls running at once (default 2 x cores)' },
  { name: 'servers', value: 'int', description: 'warm fork servers (default: one per core)' },
  { name: 'timeout-ms', value: 'int', description: 'wall-clock limit per call' },
  { name: 'memory-mb', value: 'int', description: 'memory limit per call' },
  { name: 'python', value: 'path', description: 'Python interpreter (default python3)' },
  {
    name: 'preload',
    value: 'list',
    description: 'modules the warm server imports before forking (default numpy,sympy)',
  },
];

/** Flags of `agentrl report`. */
export const REPORT_FLAGS: CommandFlag[] = [
  { name: 'out', value: 'file', description: 'where to write the page (default: <first run>/report.html)' },
];
