import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { ExecutorError } from './errors.js';

const cores = availableParallelism();

/** Limits applied to every call unless the call overrides timeoutMs / memoryMb. */
export const LimitsSchema = z.object({
  timeoutMs: z.number().int().min(10).max(600_000).default(10_000).describe('wall-clock limit per call'),
  cpuMs: z
    .number()
    .int()
    .min(100)
    .max(600_000)
    .optional()
    .describe('CPU-time limit per call (RLIMIT_CPU, whole seconds); defaults to timeoutMs'),
  memoryMb: z
    .number()
    .int()
    .min(16)
    .max(65_536)
    .default(1024)
    .describe(
      "memory one call may hold, and the ceiling of a call's own memoryMb (a call may ask for less, never more)",
    ),
  maxTimeoutMs: z
    .number()
    .int()
    .min(10)
    .max(600_000)
    .default(120_000)
    .describe("ceiling of a call's own timeoutMs (the pool's timeoutMs is allowed even when above it)"),
  maxCallOutputBytes: z
    .number()
    .int()
    .min(64)
    .max(64 * 1024 * 1024)
    .default(8 * 1024 * 1024)
    .describe(
      "ceiling of a call's own maxOutputBytes (the pool's maxOutputBytes is allowed even when above it)",
    ),
  maxOutputBytes: z
    .number()
    .int()
    .min(64)
    .max(64 * 1024 * 1024)
    .default(64 * 1024)
    .describe(
      'cap on stdout and on stderr each; longer output keeps its head and tail with a marker between',
    ),
  maxProcs: z
    .number()
    .int()
    .min(1)
    .max(4096)
    .default(64)
    .describe('processes + threads one call may have at once (RLIMIT_NPROC in its own user namespace)'),
  maxFileMb: z
    .number()
    .int()
    .min(1)
    .max(4096)
    .default(64)
    .describe('largest file a call may write (RLIMIT_FSIZE)'),
  tmpMb: z.number().int().min(1).max(4096).default(128).describe('size of the private tmpfs mounted on /tmp'),
});
export type Limits = z.infer<typeof LimitsSchema>;
export type LimitsInput = z.input<typeof LimitsSchema>;

export const PoolSchema = LimitsSchema.extend({
  concurrency: z
    .number()
    .int()
    .min(1)
    .max(4096)
    .default(Math.max(2, cores * 2))
    .describe('calls running at once in this process (default: 2 x cores)'),
  servers: z
    .number()
    .int()
    .min(1)
    .max(256)
    .default(cores)
    .describe(
      'warm fork servers of each kind; forks are serialised per server, so one per core keeps cores busy',
    ),
  python: z
    .string()
    .default('python3')
    .describe('the Python interpreter to run (resolved to its real path once)'),
  preload: z
    .array(z.string())
    .default(['numpy', 'sympy'])
    .describe('modules the warm "science" server imports before forking; missing ones are skipped'),
  leanServer: z
    .boolean()
    .default(true)
    .describe(
      'also run a bare warm server for code that imports none of `preload` (its forks are ~2x cheaper)',
    ),
  sandbox: z
    .enum(['bwrap', 'none'])
    .default('bwrap')
    .describe(
      'bwrap: full isolation; none: namespaces/rlimits inside the fork server only (tests of the pool)',
    ),
  extraReadOnly: z
    .array(z.string())
    .default([])
    .describe(
      'host paths to expose read-only inside the sandbox at the same path (under /tmp too); absolute, existing',
    ),
  networkPerCall: z
    .boolean()
    .default(true)
    .describe(
      "each call in its own network namespace, so calls cannot reach one another's loopback ports or abstract sockets (about 1 ms a call); false: calls of one fork server share its (offline) namespace",
    ),
  memoryCgroup: z
    .string()
    .refine((v) => v === 'auto' || v === 'off' || v.startsWith('/'), {
      message: "must be 'auto', 'off' or an absolute path to a cgroup v2 directory",
    })
    .default('auto')
    .describe(
      "per-call cgroup v2 memory.max on top of the sampling cap: 'auto' (this process's own group, when memory is already enabled for its children), 'off', or an absolute path to a delegated cgroup v2 directory; where none qualifies, the sampling cap alone (EmbeddedPool.memoryCap says which, and why)",
    ),
  pythonPath: z
    .array(z.string())
    .default([])
    .describe(
      'import path entries for user code, as PYTHONPATH (before the standard library); exposed read-only',
    ),
});
export type PoolConfig = z.infer<typeof PoolSchema>;
export type PoolConfigInput = z.input<typeof PoolSchema>;

/** Parses config at the edge; turns zod's report into one actionable ExecutorError. */
export function parseConfig<S extends z.ZodType>(schema: S, input: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(input ?? {});
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new ExecutorError('INVALID_CONFIG', `invalid ${what}: ${detail}; fix these fields`);
  }
  return parsed.data;
}
