import type { ParseArgsConfig } from 'node:util';

/** A subcommand of the executor's CLI. */
export type ExecutorCommand = 'serve' | 'worker';

/** One flag of `agentrl-executor serve|worker` (and of the trainer's `agentrl executor serve|worker`). */
export interface ExecutorFlag {
  name: string;
  /** Placeholder of its value in help text. */
  value: string;
  description: string;
  /** The subcommands that read it. */
  commands: readonly ExecutorCommand[];
  /** Repeatable; the values are collected in order. */
  multiple?: boolean;
}

const BOTH: readonly ExecutorCommand[] = ['serve', 'worker'];

/** Every flag of the executor's CLI, declared once: the parser, the usage text and the trainer's help come from it. */
export const EXECUTOR_FLAGS: readonly ExecutorFlag[] = [
  { name: 'host', value: 'addr', description: 'listen address (default 127.0.0.1)', commands: ['serve'] },
  { name: 'port', value: 'int', description: 'listen port (default 8090)', commands: ['serve'] },
  {
    name: 'redis',
    value: 'url',
    description: 'serve: queue calls in this Redis for workers; worker: take calls from it',
    commands: BOTH,
  },
  { name: 'prefix', value: 'str', description: 'Redis key prefix (default agentrl:exec:)', commands: BOTH },
  {
    name: 'batch-size',
    value: 'int',
    description: 'worker: calls taken per batch (default 64)',
    commands: ['worker'],
  },
  {
    name: 'visibility-ms',
    value: 'int',
    description: 'worker: a batch not acknowledged in this time is retaken (default 30000)',
    commands: ['worker'],
  },
  {
    name: 'max-pending',
    value: 'int',
    description: 'serve: calls accepted at most; more are refused with 504 (default 100000)',
    commands: ['serve'],
  },
  {
    name: 'lease-ms',
    value: 'int',
    description: "serve --redis: a killed server's queued calls are dropped after this long (default 15000)",
    commands: ['serve'],
  },
  {
    name: 'reap-after-ms',
    value: 'int',
    description: 'worker: dead workers silent this long leave the consumer group (default 2 x visibility)',
    commands: ['worker'],
  },
  {
    name: 'connect-timeout-ms',
    value: 'int',
    description: 'with --redis: fail if Redis does not answer within this (default 5000)',
    commands: BOTH,
  },
  {
    name: 'concurrency',
    value: 'int',
    description: 'calls running at once (default 2 x cores)',
    commands: BOTH,
  },
  { name: 'servers', value: 'int', description: 'warm fork servers (default: one per core)', commands: BOTH },
  { name: 'timeout-ms', value: 'int', description: 'wall-clock limit per call', commands: BOTH },
  { name: 'memory-mb', value: 'int', description: 'memory limit per call', commands: BOTH },
  { name: 'python', value: 'path', description: 'Python interpreter (default python3)', commands: BOTH },
  {
    name: 'preload',
    value: 'list',
    description: 'modules the warm server imports before forking (default numpy,sympy)',
    commands: BOTH,
  },
  {
    name: 'max-output-bytes',
    value: 'int',
    description: 'cap on stdout and on stderr each, per call (default 65536)',
    commands: BOTH,
  },
  {
    name: 'network-per-call',
    value: 'on|off',
    description: "each call in its own network namespace (default on); off shares the server's offline one",
    commands: BOTH,
  },
  {
    name: 'memory-cgroup',
    value: 'auto|off|path',
    description:
      'per-call cgroup v2 memory.max under this delegated group (default auto: own group if delegated); sampling cap otherwise',
    commands: BOTH,
  },
  {
    name: 'read-only',
    value: 'path[:path...]',
    description: 'host paths exposed read-only at the same path, /tmp ones included (repeatable)',
    commands: BOTH,
    multiple: true,
  },
  {
    name: 'pythonpath',
    value: 'path[:path...]',
    description: 'import path entries for user code, as PYTHONPATH; exposed read-only (repeatable)',
    commands: BOTH,
    multiple: true,
  },
];

/** The flags of one subcommand. */
export function executorFlagsOf(command: ExecutorCommand): ExecutorFlag[] {
  return EXECUTOR_FLAGS.filter((f) => f.commands.includes(command));
}

/** The table as `node:util` parseArgs options (every flag takes a string value), plus --help / -h. */
export function executorParseOptions(): NonNullable<ParseArgsConfig['options']> {
  const options: NonNullable<ParseArgsConfig['options']> = { help: { type: 'boolean', short: 'h' } };
  for (const f of EXECUTOR_FLAGS) options[f.name] = { type: 'string', multiple: f.multiple ?? false };
  return options;
}

/** `agentrl-executor` usage: both subcommands with their flags. */
export function executorUsage(bin = 'agentrl-executor'): string {
  const lines = ['usage:'];
  for (const command of ['serve', 'worker'] as const) {
    lines.push(`  ${bin} ${command} [options]`);
    for (const f of executorFlagsOf(command))
      lines.push(`    --${`${f.name} <${f.value}>`.padEnd(32)}${f.description}`);
  }
  return lines.join('\n');
}
