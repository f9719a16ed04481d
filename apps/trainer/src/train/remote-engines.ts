import { connectEngines, type RemoteEngine, syncEngineWeights, withRetry } from '@agentrl/engine-adapters';
import type { RolloutTokenizer } from '@agentrl/rollout';
import type { TrainConfig } from '../config/schema.js';
import { TrainerError } from '../errors.js';
import { replaceDir } from '../run/replace-dir.js';

/** The server URLs of `engine.url` (comma-separated), each checked to be http(s). */
export function engineUrls(cfg: TrainConfig): string[] {
  if (!cfg.engine.url) return [];
  const urls = cfg.engine.url
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
  for (const u of urls) {
    if (!/^https?:\/\/[^/\s]+/.test(u))
      throw new TrainerError(
        'CONFIG_INVALID',
        `config: engine.url "${u}" is not an http(s) URL; give the server base URLs, e.g. --engine http://127.0.0.1:8000,http://127.0.0.1:8001`,
      );
  }
  if (urls.length === 0)
    throw new TrainerError('CONFIG_INVALID', 'config: engine.url lists no URL; give one or leave it unset');
  return urls;
}

/**
 * Opens every configured server and checks it before anything runs (@agentrl/rollout's
 * `connectEngines`): reachable (`/health`), serving the configured model (or exactly one, read from
 * `/v1/models`), and tokenizing as the local tokenizer does. Errors name the URL and the fix.
 */
export async function connectRemoteEngines(
  cfg: TrainConfig,
  tokenizer: RolloutTokenizer,
  log: (line: string) => void = () => {},
): Promise<RemoteEngine[]> {
  const engines = await connectEngines({
    kind: cfg.engine.kind,
    urls: engineUrls(cfg),
    tokenizer,
    retry: { attempts: cfg.engine.retries },
    ...(cfg.engine.model !== null ? { model: cfg.engine.model } : {}),
    ...(cfg.engine.weightsDir !== null ? { modelDir: cfg.engine.weightsDir } : {}),
  });
  const how = {
    tokenize: 'agrees (/tokenize)',
    generate: 'agrees (a one-token generation)',
    skipped: 'not checked',
  };
  for (const e of engines)
    log(`engine ${e.name}: model "${e.info.model}", tokenizer ${how[e.info.tokenizerCheck]}`);
  return engines;
}

/** Where weight syncs write the policy for the servers, checked when the run is trainable. */
export function weightsDirFor(cfg: TrainConfig, runRoot: string | null): string {
  if (cfg.engine.weightsDir !== null) return cfg.engine.weightsDir;
  if (cfg.engine.kind === 'vllm')
    throw new TrainerError(
      'CONFIG_INVALID',
      'config: engine.weightsDir is unset, but a vLLM server reloads weights only from the directory it was launched on; launch `vllm serve DIR` and pass --engine.weightsDir DIR',
    );
  if (runRoot === null)
    throw new TrainerError(
      'CONFIG_INVALID',
      'config: engine.weightsDir is needed to sync weights to the engine',
    );
  return `${runRoot}/engine-weights`;
}

/**
 * Pushes new weights to every server: `write` saves an HF checkpoint into a fresh directory, which
 * replaces `dir` by rename (a server never reads a half-written file), then each server loads it
 * (SGLang `update_weights_from_disk`, vLLM `reload_weights`) under `version`. A server that stays
 * unreachable through the retries stops the run with the URL and what to do.
 */
export async function syncRemoteWeights(
  engines: readonly RemoteEngine[],
  cfg: TrainConfig,
  dir: string,
  version: number,
  write: (dir: string) => Promise<void>,
): Promise<void> {
  await replaceDir(dir, write, '.next');
  try {
    await withRetry(
      `weight sync to ${engines.map((e) => e.name).join(', ')}`,
      () => syncEngineWeights(engines, { kind: 'disk', path: dir, version }),
      { attempts: cfg.engine.retries },
    );
  } catch (cause) {
    throw new TrainerError(
      'ENGINE_UNREACHABLE',
      `engine: the weight sync of policy version ${version} failed (${(cause as Error).message}); the run stopped: bring the server back and continue with --resume`,
      { cause },
    );
  }
}
