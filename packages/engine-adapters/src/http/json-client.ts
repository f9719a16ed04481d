import { RolloutError, RolloutErrorCode } from '@agentrl/rollout';
import { Agent, errors, request } from 'undici';

export interface JsonClientOptions {
  /** Base URL, e.g. `http://10.0.0.3:8000`. */
  baseUrl: string;
  /** Longest wait for a reply (headers and between body chunks), ms. */
  timeoutMs?: number;
  /** Sent as `Authorization: Bearer …` when set (vLLM `--api-key`, SGLang `--api-key`). */
  apiKey?: string;
  /** Concurrent connections kept to the server. */
  connections?: number;
}

/** A small JSON-over-HTTP client that turns every transport failure into a RolloutError with a code. */
export interface JsonClient {
  readonly baseUrl: string;
  post<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T>;
  get<T>(path: string, signal?: AbortSignal): Promise<T>;
  getText(path: string, signal?: AbortSignal): Promise<string>;
  /** POST whose reply is not JSON (vLLM's `/reset_prefix_cache` answers 200 with an empty body). */
  postText(path: string, body: unknown, signal?: AbortSignal): Promise<string>;
  close(): Promise<void>;
}

export function createJsonClient(options: JsonClientOptions): JsonClient {
  const baseUrl = options.baseUrl.replace(/\/$/, '');
  const timeout = options.timeoutMs ?? 600_000;
  const dispatcher = new Agent({
    connections: options.connections ?? 256,
    headersTimeout: timeout,
    bodyTimeout: timeout,
    keepAliveTimeout: 30_000,
  });
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;

  const call = async (method: 'GET' | 'POST', path: string, body: unknown, signal?: AbortSignal) => {
    const url = `${baseUrl}${path}`;
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(url, {
        method,
        headers,
        dispatcher,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      throw transportError(err, url, timeout);
    }
    let text: string;
    try {
      text = await res.body.text();
    } catch (err) {
      throw transportError(err, url, timeout, true);
    }
    if (res.statusCode >= 400) {
      throw new RolloutError(
        RolloutErrorCode.ENGINE_HTTP_ERROR,
        `rollout: ${method} ${url} answered ${res.statusCode}: ${text.slice(0, 500)}`,
      );
    }
    return text;
  };
  const parse = <T>(text: string, path: string): T => {
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new RolloutError(
        RolloutErrorCode.ENGINE_BAD_RESPONSE,
        `rollout: ${baseUrl}${path} sent a reply that is not JSON (cut off?): ${text.slice(0, 200)}`,
        { cause: err },
      );
    }
  };
  return {
    baseUrl,
    post: async (path, body, signal) => parse(await call('POST', path, body, signal), path),
    get: async (path, signal) => parse(await call('GET', path, undefined, signal), path),
    getText: (path, signal) => call('GET', path, undefined, signal),
    postText: (path, body, signal) => call('POST', path, body, signal),
    // Destroy, not close: a request stuck on a dead server must not keep the adapter open.
    close: () => dispatcher.destroy(),
  };
}

/** Maps undici/Node errors to the engine-failure codes the agent loop turns into finish reasons. */
function transportError(err: unknown, url: string, timeoutMs: number, midBody = false): RolloutError {
  const e = err as { code?: string; name?: string; message?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code;
  if (e.name === 'AbortError' || code === 'UND_ERR_ABORTED' || err instanceof errors.RequestAbortedError) {
    return new RolloutError(RolloutErrorCode.ABORTED, `rollout: request to ${url} was cancelled`, {
      cause: err,
    });
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new RolloutError(
      RolloutErrorCode.ENGINE_TIMEOUT,
      `rollout: ${url} did not answer within ${timeoutMs} ms; raise the request timeout or check the server's load`,
      { cause: err },
    );
  }
  if (
    !midBody &&
    (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH' || code === 'ECONNRESET')
  ) {
    return new RolloutError(
      RolloutErrorCode.ENGINE_UNREACHABLE,
      `rollout: could not reach ${url} (${code}); is the inference server running and listening there?`,
      { cause: err },
    );
  }
  return new RolloutError(
    RolloutErrorCode.ENGINE_BAD_RESPONSE,
    `rollout: the reply from ${url} was cut off or malformed (${code ?? e.message}); the server may have crashed mid-request`,
    { cause: err },
  );
}
