import { ExecutorError } from './errors.js';
import { checkRequest } from './requests.js';
import type { Semaphore } from './semaphore.js';
import type { StatsRecorder } from './stats.js';
import type { RunRequest, RunResult } from './types.js';

export interface RemoteCallContext {
  closed: boolean;
  gate: Semaphore;
  recorder: StatsRecorder;
  defaults: { timeoutMs?: number | undefined; memoryMb?: number | undefined };
}

/**
 * The client side of one call, shared by the HTTP and Redis clients: argument checks (checkRequest), per-call
 * defaults, the in-flight cap and latency stats around `dispatch`, which hands the call to the
 * client's batcher and resolves with its one answer.
 */
export async function runRemoteCall(
  ctx: RemoteCallContext,
  req: RunRequest,
  dispatch: (request: RunRequest, started: number) => Promise<RunResult>,
): Promise<RunResult> {
  if (ctx.closed) throw new ExecutorError('CLOSED', 'run() after close(); create a new executor');
  // Refused here, alone: a malformed call never joins a batch of other callers' calls.
  checkRequest(req);
  const started = performance.now();
  ctx.recorder.inFlight++;
  await ctx.gate.acquire();
  const request: RunRequest = {
    ...req,
    timeoutMs: req.timeoutMs ?? ctx.defaults.timeoutMs,
    memoryMb: req.memoryMb ?? ctx.defaults.memoryMb,
  };
  const result = await dispatch(request, started);
  ctx.gate.release();
  ctx.recorder.inFlight--;
  ctx.recorder.record(result);
  return result;
}
