import type { FinishReason, SamplingParams, ToolCall, ToolOutcome, Trajectory } from '@agentrl/protocol';
import type { ChatFormat } from './chat-format.js';
import { wrapToolResponse } from './chat-format.js';
import type { AgentLoopConfig } from './config.js';
import type { EngineAdapter, GenerateResult } from './engine-adapter.js';
import { isEngineFailure, RolloutError, RolloutErrorCode } from './errors.js';
import { type RolloutTokenizer, singleTokenId } from './tokenizer.js';
import { parseToolCall, TOOL_CALL_CLOSE } from './tool-call-parser.js';
import { formatToolOutcome } from './tool-response.js';
import type { ToolRegistry } from './tools.js';
import { toolError } from './tools.js';
import { TrajectoryBuilder } from './trajectory-builder.js';

/** Everything one trajectory needs, shared by all trajectories of a rollout. */
export interface AgentLoopContext {
  tokenizer: RolloutTokenizer;
  chatFormat: ChatFormat;
  tools: ToolRegistry;
  config: AgentLoopConfig;
}

export interface TrajectoryJob {
  id: string;
  promptId: string;
  promptIds: readonly number[];
  promptText: string;
  /** Per-trajectory seed, so the n samples of one prompt differ yet the run is reproducible. */
  seed?: number;
  /**
   * Policy version of the weights the engine holds, for engines that do not report one (the
   * in-process engine); a version the engine reports wins.
   */
  policyVersion?: number;
  signal?: AbortSignal;
}

/**
 * Stop settings for a turn: end of turn and `</tool_call>`, as single token ids when the tokenizer
 * has them (exact, cheap for the engine), else as stop strings.
 */
export function turnStops(ctx: Pick<AgentLoopContext, 'tokenizer' | 'chatFormat'>, base: SamplingParams) {
  // The checkpoint's own eos ids (Qwen3: <|im_end|> and <|endoftext|>) end a turn too.
  const stopTokenIds = [...new Set([...base.stopTokenIds, ...(ctx.tokenizer.stopTokenIds ?? [])])];
  const stopStrings = [...base.stopStrings];
  for (const text of [ctx.chatFormat.endOfTurn, TOOL_CALL_CLOSE]) {
    const id = singleTokenId(ctx.tokenizer, text);
    if (id !== null) {
      if (!stopTokenIds.includes(id)) stopTokenIds.push(id);
    } else if (!stopStrings.includes(text)) stopStrings.push(text);
  }
  return { stopTokenIds, stopStrings };
}

/**
 * Runs one trajectory on one engine: generate a turn, run its tool call, append the response as a
 * user turn, and repeat until the model answers, a limit is hit or the engine fails. Never throws
 * for engine or tool failures; they end in a finish reason or a tool-error outcome.
 */
export async function runTrajectory(
  ctx: AgentLoopContext,
  engine: EngineAdapter,
  job: TrajectoryJob,
): Promise<Trajectory> {
  const { config, tokenizer, tools } = ctx;
  const t = new TrajectoryBuilder(job.id, job.promptId, job.promptIds, job.promptText);
  const limit = job.promptIds.length + config.maxResponseTokens;
  const stops = turnStops(ctx, config.sampling);
  let finish: FinishReason = 'max_turns';
  let engineError: string | undefined;
  let policyVersion = job.policyVersion;
  try {
    for (let turn = 0; turn < config.maxTurns; turn++) {
      const budget = limit - t.length;
      if (budget <= 0) {
        finish = 'token_budget';
        break;
      }
      const maxNewTokens = Math.min(config.sampling.maxNewTokens, budget);
      const params: SamplingParams = {
        ...config.sampling,
        ...stops,
        maxNewTokens,
        ...(job.seed !== undefined ? { seed: job.seed + turn * 7919 } : {}),
      };
      let result: GenerateResult;
      try {
        result = await generateWithDeadline(engine, job, t.tokenIds, params, config.requestTimeoutMs);
      } catch (err) {
        if (!isEngineFailure(err)) throw err;
        engineError = err.message;
        finish = engineFinishReason(err);
        break;
      }
      policyVersion = oldestPolicyVersion(policyVersion, result.policyVersion, turn);
      const text = tokenizer.decode(result.tokenIds);
      t.appendSampled(result.tokenIds, result.logprobs, text);
      if (result.finishReason === 'length') {
        finish = maxNewTokens < config.sampling.maxNewTokens ? 'token_budget' : 'length';
        break;
      }
      const parsed = parseToolCall(text, tools.names);
      if (parsed.kind === 'none') {
        finish = 'stop';
        break;
      }
      if (turn === config.maxTurns - 1) break; // the call would have no turn left to read its result
      const outcome =
        parsed.kind === 'call'
          ? await runToolWithDeadline(tools, parsed.call, job, config.toolTimeoutMs)
          : toolError(parsed.failure.message, 0, 'parse_error');
      t.toolCalls.push({
        turn,
        call: parsed.kind === 'call' ? parsed.call : null,
        parseFailure: parsed.kind === 'failure' ? parsed.failure : null,
        outcome,
      });
      const segment = toolResponseSegment(ctx, text, outcome);
      // Only the new segment is encoded: the tokens already in the trajectory never change.
      const segmentIds = tokenizer.encode(segment);
      if (t.length + segmentIds.length >= limit) {
        finish = 'token_budget';
        break;
      }
      t.appendContext('user', segmentIds, segment);
    }
  } finally {
    await engine.release(job.id);
  }
  return t.finish(finish, {
    ...(policyVersion !== undefined ? { policyVersion } : {}),
    ...(engineError !== undefined ? { engineError } : {}),
  });
}

/** How an engine failure ends the trajectory. */
function engineFinishReason(err: RolloutError): FinishReason {
  if (err.code === RolloutErrorCode.ENGINE_TIMEOUT) return 'timeout';
  if (err.code === RolloutErrorCode.ABORTED) return 'aborted';
  return 'engine_error';
}

/**
 * The oldest weights that sampled any turn: what the trainer's off-policy accounting needs. The
 * first turn's report replaces the job's own version.
 */
function oldestPolicyVersion(sofar: number | undefined, sampled: number | undefined, turn: number) {
  if (sampled === undefined) return sofar;
  return sofar === undefined || turn === 0 ? sampled : Math.min(sofar, sampled);
}

/** The text appended after an assistant turn that called a tool: close, the tool's turn, reopen. */
function toolResponseSegment(ctx: AgentLoopContext, assistantText: string, outcome: ToolOutcome): string {
  const output = formatToolOutcome(outcome, ctx.config.toolResponseMaxChars);
  const response = ctx.chatFormat.toolRole === 'tool' ? output : wrapToolResponse(output);
  return ctx.chatFormat.toolResponseSegment(assistantText, response);
}

/** A tool that never returns must not hang the trajectory: past the deadline it counts as a timeout. */
async function runToolWithDeadline(
  tools: ToolRegistry,
  call: ToolCall,
  job: TrajectoryJob,
  ms: number,
): Promise<ToolOutcome> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<ToolOutcome>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({
          status: 'timeout',
          stdout: '',
          stderr: `the tool did not return within ${ms} ms`,
          exitCode: null,
          signal: null,
          wallMs: ms,
          cpuMs: null,
        }),
      ms,
    );
  });
  try {
    return await Promise.race([tools.run(call, { trajectoryId: job.id, ...signalOf(job) }), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function signalOf(job: { signal?: AbortSignal }): { signal?: AbortSignal } {
  return job.signal ? { signal: job.signal } : {};
}

/**
 * Calls the engine with a signal that fires on the caller's abort or after `ms`, and races the call
 * against that signal so that an engine ignoring it still cannot hang the trajectory.
 */
async function generateWithDeadline(
  engine: EngineAdapter,
  job: TrajectoryJob,
  tokenIds: readonly number[],
  params: SamplingParams,
  ms: number,
): Promise<GenerateResult> {
  const deadline = new AbortController();
  const timer = setTimeout(
    () =>
      deadline.abort(
        new RolloutError(
          RolloutErrorCode.ENGINE_TIMEOUT,
          `rollout: ${engine.name} did not answer within ${ms} ms`,
        ),
      ),
    ms,
  );
  const onCallerAbort = () =>
    deadline.abort(new RolloutError(RolloutErrorCode.ABORTED, 'rollout: the trajectory was cancelled'));
  if (job.signal?.aborted) onCallerAbort();
  job.signal?.addEventListener('abort', onCallerAbort, { once: true });
  const aborted = new Promise<never>((_, reject) => {
    const fire = () => reject(deadline.signal.reason);
    if (deadline.signal.aborted) fire();
    else deadline.signal.addEventListener('abort', fire, { once: true });
  });
  aborted.catch(() => {}); // handled by the race below; avoid an unhandled rejection after success
  try {
    return await Promise.race([
      engine.generate({ cacheId: job.id, tokenIds: [...tokenIds], params, signal: deadline.signal }),
      aborted,
    ]);
  } catch (err) {
    // An adapter that saw the abort reports ABORTED; say why it was aborted.
    if (deadline.signal.aborted && deadline.signal.reason instanceof RolloutError)
      throw deadline.signal.reason;
    throw err;
  } finally {
    clearTimeout(timer);
    job.signal?.removeEventListener('abort', onCallerAbort);
  }
}
