import type { ToolOutcome, ToolStatus } from '@agentrl/protocol';

/** The statuses the executor produces (protocol's ToolStatus minus the rollout's own two). */
export type ExecutorStatus = Exclude<ToolStatus, 'parse_error' | 'tool_error'>;

/** One call: Python source plus optional stdin and per-call limits (unset ones take the executor's). */
export interface RunRequest {
  code: string;
  stdin?: string;
  timeoutMs?: number;
  memoryMb?: number;
  /** Print the repr of the last expression, as a notebook cell would. */
  lastExpression?: boolean;
  /** Cap on stdout and on stderr each for this call (default: the executor's maxOutputBytes). */
  maxOutputBytes?: number;
  /** middle (default): keep the head and the tail with a marker between; head: keep the first bytes only. */
  truncate?: 'middle' | 'head';
  /**
   * Remote clients: how long the caller waits for an answer, counted from when the client takes the call
   * (after any wait for maxInFlight); past it the call ends with a DEADLINE error and no worker starts
   * it any more. Default: timeoutMs + answerSlackMs, from the first send (HTTP) or the first enqueue
   * (Redis: waiting on a full queue does not count). The embedded pool ignores it.
   */
  deadlineMs?: number;
}

/** A ToolOutcome with the executor's extras. */
export interface RunResult extends ToolOutcome {
  status: ExecutorStatus;
  /** Bytes the program wrote before truncation. */
  stdoutBytes: number;
  stderrBytes: number;
  /** Caller-side latency: from run() to the answer, queueing and transport included. */
  latencyMs: number;
  /** Set when the executor, not the program, failed (status is then sandbox_error). */
  error?: { code: string; message: string };
}

/** Latency and outcome counters since the executor was created. */
export interface ExecutorStats {
  calls: number;
  inFlight: number;
  byStatus: Record<string, number>;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
}

/** Per-call options of the remote clients (the embedded pool ignores them). */
export interface RunOptions {
  /**
   * Aborting gives the call up: it resolves at once with sandbox_error / CANCELLED, and (Redis) no
   * worker starts it afterwards. The HTTP server aborts the calls of a request whose caller hung up.
   */
  signal?: AbortSignal;
}

/** The client API, the same in all three modes. */
export interface Executor {
  readonly mode: 'embedded' | 'http' | 'redis';
  /** Runs one call. Resolves with a structured result; infrastructure failures become sandbox_error. */
  run(request: RunRequest, options?: RunOptions): Promise<RunResult>;
  /** Runs many calls; results come back in order. */
  runBatch(requests: readonly RunRequest[], options?: RunOptions): Promise<RunResult[]>;
  stats(): ExecutorStats;
  /** Workers behind this executor: the pool's concurrency, or live Redis consumers (code-judge /status). */
  workers?(): Promise<number>;
  close(): Promise<void>;
}
