export { main as executorCli } from './bin.js';
export {
  EXECUTOR_FLAGS,
  type ExecutorCommand,
  type ExecutorFlag,
  executorFlagsOf,
  executorParseOptions,
  executorUsage,
} from './cli-flags.js';
export {
  type Limits,
  type LimitsInput,
  LimitsSchema,
  type PoolConfig,
  type PoolConfigInput,
  PoolSchema,
} from './config.js';
export { type CreateExecutorOptions, createExecutor, type ExecutorMode } from './create-executor.js';
export { EmbeddedPool } from './embedded-pool.js';
export { ExecutorError, ExecutorErrorCode } from './errors.js';
export { type HttpClientOptions, HttpExecutor } from './http-client.js';
export { createHttpServer, type HttpServerOptions } from './http-server.js';
export { type CgroupProbe, detectMemoryCgroup, type MemoryCap } from './memory-cgroup.js';
export { type RedisClientOptions, RedisClientSchema, RedisExecutor } from './redis-client.js';
export {
  startWorker,
  type Worker,
  type WorkerOptions,
  WorkerSchema,
  type WorkerSkips,
} from './redis-worker.js';
export { type RunningServer, type ServeOptions, serve } from './serve.js';
export type { Executor, ExecutorStats, ExecutorStatus, RunOptions, RunRequest, RunResult } from './types.js';
