import { type PoolConfig, type PoolConfigInput, PoolSchema, parseConfig } from './config.js';
import { ExecutorError } from './errors.js';
import { ForkServer } from './fork-server.js';
import { detectMemoryCgroup, type MemoryCap } from './memory-cgroup.js';
import { answerEach, errorResult, resolveRequest, toResult } from './requests.js';
import { checkBwrap, checkExposedPaths, resolvePython } from './sandbox-spec.js';
import { Semaphore } from './semaphore.js';
import { StatsRecorder } from './stats.js';
import type { Executor, ExecutorStats, RunRequest, RunResult } from './types.js';

/**
 * The in-process pool: one or two warm fork servers and a concurrency cap. Code that imports one of
 * the preloaded modules goes to the "science" server (which has them imported already); other code goes
 * to the lean one, whose smaller heap makes each fork about twice as cheap. Results are identical.
 */
export class EmbeddedPool implements Executor {
  readonly mode = 'embedded' as const;
  readonly config: PoolConfig;
  private readonly science: ForkServer[];
  private readonly lean: ForkServer[];
  private readonly gate: Semaphore;
  private readonly recorder = new StatsRecorder();
  private readonly preloadPattern: RegExp | undefined;
  private closed = false;
  /** How the per-call memory cap is enforced here: a cgroup's memory.max, or sampling alone (and why). */
  readonly memoryCap: MemoryCap;

  constructor(input: PoolConfigInput = {}) {
    this.config = parseConfig(PoolSchema, input, 'embedded pool config');
    const { preload, sandbox, networkPerCall } = this.config;
    const extraReadOnly = checkExposedPaths(this.config.extraReadOnly, 'extraReadOnly (--read-only)');
    const pythonPath = checkExposedPaths(this.config.pythonPath, 'pythonPath (--pythonpath)');
    if (sandbox === 'bwrap') checkBwrap();
    const python = resolvePython(this.config.python);
    this.memoryCap = detectMemoryCgroup(this.config.memoryCgroup);
    const memoryCgroup = this.memoryCap.kind === 'cgroup' ? this.memoryCap.parent : null;
    const make = (modules: readonly string[]) =>
      Array.from(
        { length: this.config.servers },
        () =>
          new ForkServer({
            python,
            preload: modules,
            sandbox,
            extraReadOnly,
            pythonPath,
            networkPerCall,
            memoryCgroup,
          }),
      );
    this.science = make(preload);
    this.lean = [];
    if (this.config.leanServer && preload.length > 0) {
      this.lean = make([]);
      const names = preload.map((m) => m.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
      // Any mention of a preloaded module (import, __import__, importlib) routes to the warm science server.
      this.preloadPattern = new RegExp(`\\b(${names})\\b`);
    }
    this.gate = new Semaphore(this.config.concurrency);
  }

  /** Starts the fork servers (imports included); run() also does this lazily. */
  async start(): Promise<this> {
    await Promise.all([...this.science, ...this.lean].map((s) => s.start()));
    return this;
  }

  async run(request: RunRequest): Promise<RunResult> {
    if (this.closed) throw new ExecutorError('CLOSED', 'run() after close(); create a new executor');
    const raw = resolveRequest(request, this.config);
    const started = performance.now();
    this.recorder.inFlight++;
    await this.gate.acquire();
    let result: RunResult;
    try {
      const kind = this.lean.length > 0 && !this.preloadPattern?.test(raw.code) ? this.lean : this.science;
      const server = leastBusy(kind);
      result = toResult(await server.run(raw), performance.now() - started);
    } catch (error) {
      result = errorResult(error as Error, performance.now() - started);
    } finally {
      this.gate.release();
      this.recorder.inFlight--;
    }
    this.recorder.record(result);
    return result;
  }

  /** Each call on its own: a malformed one is answered sandbox_error / INVALID_REQUEST, the others run. */
  runBatch(requests: readonly RunRequest[]): Promise<RunResult[]> {
    return answerEach(requests, (r) => this.run(r));
  }

  async workers(): Promise<number> {
    return this.config.concurrency;
  }

  stats(): ExecutorStats {
    return this.recorder.snapshot();
  }

  /** Calls waiting for a free slot (for back-pressure and metrics). */
  get queued(): number {
    return this.gate.queued;
  }

  /** Fork-server process ids (bwrap's), for fault tests. */
  get serverPids(): (number | undefined)[] {
    return [...this.science, ...this.lean].map((s) => s.pid);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.science, ...this.lean].map((s) => s.close()));
  }
}

function leastBusy(servers: readonly ForkServer[]): ForkServer {
  let best = servers[0] as ForkServer;
  for (const s of servers) if (s.inFlight < best.inFlight) best = s;
  return best;
}
