import { openCheckpoint } from './open-checkpoint.js';
import { startEngineServer } from './server.js';

export interface ServeOptions {
  checkpoint: string;
  host?: string;
  port?: number;
  servedModelName?: string;
  maxBatch?: number;
  kvCapacityTokens?: number;
}

/**
 * `agentrl serve --checkpoint DIR`: opens the checkpoint with its own tokenizer, serves it, prints
 * one line with the URL (tests and scripts read it), and closes cleanly on SIGINT / SIGTERM.
 */
export async function serveCheckpoint(options: ServeOptions, log: (line: string) => void = console.log) {
  const { model, tokenizer, tokenizerKind } = await openCheckpoint(options.checkpoint);
  const server = await startEngineServer({
    model,
    tokenizer,
    modelPath: options.checkpoint,
    ...(options.servedModelName !== undefined ? { servedModelName: options.servedModelName } : {}),
    ...(options.maxBatch !== undefined ? { maxBatch: options.maxBatch } : {}),
    ...(options.kvCapacityTokens !== undefined ? { kvCapacityTokens: options.kvCapacityTokens } : {}),
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 8000,
  });
  log(
    `agentrl serve: ${server.modelName} (${tokenizerKind} tokenizer, vocab ${tokenizer.vocabSize}) on ${server.url}`,
  );
  const stop = () => {
    void server.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return server;
}
