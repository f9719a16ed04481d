import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { join } from 'node:path';
import { ExecutorError } from './errors.js';
import { LineSplitter } from './line-splitter.js';
import { bwrapArgs, FORKSERVER_DIR, type PythonInfo, underCallTmpfs } from './sandbox-spec.js';
import type { ExecutorStatus } from './types.js';

/** How long past a call's own limit the fork server may stay silent before it is declared hung. */
const WATCHDOG_SLACK_MS = 30_000;

/** What the Python side answers for one call (see python/forkserver.py). */
export interface RawResult {
  id: number;
  status: ExecutorStatus;
  stdout: string;
  stderr: string;
  exitCode: number | null;
  signal: string | null;
  wallMs: number;
  cpuMs: number | null;
  stdoutBytes: number;
  stderrBytes: number;
  /** Set with sandbox_error when the server knows more than "the sandbox failed" (KILLED). */
  errorCode?: 'KILLED';
}

/** The fully resolved request sent to the fork server. */
export interface RawRequest {
  code: string;
  stdin: string;
  timeoutMs: number;
  cpuMs: number;
  memoryMb: number;
  maxOutputBytes: number;
  /** middle: keep head and tail with a marker between; head: keep the first maxOutputBytes only. */
  truncate: 'middle' | 'head';
  maxProcs: number;
  maxFileMb: number;
  tmpMb: number;
  lastExpression: boolean;
}

export interface ForkServerOptions {
  python: PythonInfo;
  preload: readonly string[];
  sandbox: 'bwrap' | 'none';
  extraReadOnly: readonly string[];
  /** Import path entries for user code (exposed read-only, put where PYTHONPATH would put them). */
  pythonPath: readonly string[];
  /** Each call in its own network namespace (true), or sharing the fork server's. */
  networkPerCall: boolean;
  /** A delegated cgroup v2 directory for per-call memory.max (src/memory-cgroup.ts), or null: sampling only. */
  memoryCgroup?: string | null;
}

/**
 * One warm Python fork server in its bubblewrap sandbox. Calls are multiplexed over its stdin/stdout
 * as JSON lines; it runs them concurrently, one forked child each. If it dies, every pending call is
 * answered with sandbox_error and the next call starts a fresh server.
 */
export class ForkServer {
  private proc: ChildProcessWithoutNullStreams | undefined;
  private starting: Promise<void> | undefined;
  private readonly pending = new Map<number, (r: RawResult) => void>();
  private nextId = 1;
  private closed = false;
  /** Calls handed to run() and not yet answered, counted synchronously so that a burst spreads out. */
  private assigned = 0;
  restarts = 0;

  constructor(private readonly opts: ForkServerOptions) {}

  get inFlight(): number {
    return this.assigned;
  }

  /** Starts the process and waits until it has imported its preloads. */
  start(): Promise<void> {
    if (this.closed) return Promise.reject(new ExecutorError('CLOSED', 'the fork server was closed'));
    this.starting ??= this.spawn();
    return this.starting;
  }

  private spawn(): Promise<void> {
    const { python, sandbox } = this.opts;
    const script = sandbox === 'bwrap' ? '/agentrl/forkserver.py' : join(FORKSERVER_DIR, 'forkserver.py');
    const argv = [python.executable, '-I', script];
    const [cmd, ...args] =
      sandbox === 'bwrap'
        ? [
            'bwrap',
            ...bwrapArgs(
              python,
              [...this.opts.extraReadOnly, ...this.opts.pythonPath],
              this.opts.memoryCgroup,
            ),
            ...argv,
          ]
        : argv;
    const env = {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      LANG: 'C.UTF-8',
      AGENTRL_PRELOAD: this.opts.preload.join(','),
      // Paths that each call's own tmpfs on /tmp or /dev/shm would hide: the server re-binds them per call.
      AGENTRL_TMP_BINDS: JSON.stringify(
        [...this.opts.extraReadOnly, ...this.opts.pythonPath].filter(underCallTmpfs),
      ),
      AGENTRL_PYTHONPATH: this.opts.pythonPath.join(':'),
      AGENTRL_NETWORK_PER_CALL: this.opts.networkPerCall ? '1' : '0',
      AGENTRL_MEMORY_CGROUP: this.opts.memoryCgroup ?? '',
      // One BLAS thread: the server must stay single-threaded to fork safely, and calls run in parallel anyway.
      OPENBLAS_NUM_THREADS: '1',
      OMP_NUM_THREADS: '1',
      MKL_NUM_THREADS: '1',
    };
    const proc = spawn(cmd as string, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc = proc;
    let stderrTail = '';
    return new Promise<void>((resolve, reject) => {
      let ready = false;
      const lines = new LineSplitter((line) => {
        const msg = JSON.parse(line) as RawResult & { ready?: boolean };
        if (msg.ready) {
          ready = true;
          resolve();
          return;
        }
        const done = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        done?.(msg);
      });
      proc.stdout.setEncoding('utf8');
      proc.stdout.on('data', (chunk: string) => lines.push(chunk));
      proc.stderr.setEncoding('utf8');
      proc.stderr.on('data', (chunk: string) => {
        stderrTail = (stderrTail + chunk).slice(-4000);
      });
      proc.stdin.on('error', () => {}); // EPIPE after a crash: handled by 'exit'
      proc.on('error', (cause) => {
        if (!ready)
          reject(
            new ExecutorError('SANDBOX_UNAVAILABLE', `could not start the fork server (${cmd})`, { cause }),
          );
      });
      proc.on('exit', (code, signal) => {
        if (this.proc === proc) {
          this.proc = undefined;
          this.starting = undefined;
        }
        const why = `fork server exited (code ${code}, signal ${signal})${stderrTail ? `: ${stderrTail.trim()}` : ''}`;
        if (!ready) reject(new ExecutorError('SANDBOX_UNAVAILABLE', why));
        else if (!this.closed) this.restarts++;
        for (const [id, done] of this.pending) done(crashResult(id, why));
        this.pending.clear();
      });
    });
  }

  /** Sends one call; resolves when its child has exited and its pipes are drained. */
  async run(req: RawRequest): Promise<RawResult> {
    this.assigned++;
    try {
      return await this.send(req);
    } finally {
      this.assigned--;
    }
  }

  private async send(req: RawRequest): Promise<RawResult> {
    await this.start();
    const proc = this.proc;
    const id = this.nextId++;
    if (!proc) return crashResult(id, 'fork server is not running');
    return new Promise<RawResult>((resolve) => {
      // The server enforces the limit itself; this only catches a server that stopped answering.
      const watchdog = setTimeout(() => {
        if (this.pending.has(id)) proc.kill('SIGKILL'); // 'exit' answers every pending call
      }, req.timeoutMs + WATCHDOG_SLACK_MS);
      this.pending.set(id, (r) => {
        clearTimeout(watchdog);
        resolve(r);
      });
      proc.stdin.write(`${JSON.stringify({ id, ...req })}\n`);
    });
  }

  /** Pid of the bwrap (or Python) process, for fault tests. */
  get pid(): number | undefined {
    return this.proc?.pid;
  }

  async close(): Promise<void> {
    this.closed = true;
    const proc = this.proc;
    if (!proc) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => proc.kill('SIGKILL'), 2000);
      proc.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      proc.stdin.end(); // EOF: the server finishes running calls, then exits
    });
  }
}

function crashResult(id: number, message: string): RawResult {
  return {
    id,
    status: 'sandbox_error',
    stdout: '',
    stderr: `executor: ${message}`,
    exitCode: null,
    signal: null,
    wallMs: 0,
    cpuMs: null,
    stdoutBytes: 0,
    stderrBytes: 0,
  };
}
