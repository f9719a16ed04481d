import { type ExecutorCommand, executorFlagsOf } from '@agentrl/executor';
import type { CommandFlag, ConfigScope } from './args.js';

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

/**
 * The config options `agentrl eval` reads: the model and its tokenizer, the task split, eval.*, the
 * executor and engine, and the few rl.* limits of a tool-using turn. Its --help lists only these.
 */
export const EVAL_CONFIG: ConfigScope = {
  command: 'eval',
  uses: [
    'seed',
    'threads',
    'device',
    'precision',
    'model',
    'task',
    'eval',
    'executor',
    'engine',
    'rl.maxTurns',
    'rl.maxTurnTokens',
    'rl.toolResponseMaxChars',
  ],
};

/** Flags of `agentrl eval`; the config options of EVAL_CONFIG also apply. */
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

/** Flags of `agentrl executor serve|worker`: the executor's own table (@agentrl/executor declares them). */
export function serveFlags(command: ExecutorCommand): CommandFlag[] {
  return executorFlagsOf(command).map((f) => ({
    name: f.name,
    value: f.value,
    description: f.description,
    repeatable: f.multiple ?? false,
  }));
}

/** Flags of `agentrl report`. */
export const REPORT_FLAGS: CommandFlag[] = [
  { name: 'out', value: 'file', description: 'where to write the page (default: <first run>/report.html)' },
];
