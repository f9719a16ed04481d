import { parseServeArgs, SERVE_USAGE, serveCheckpoint } from '@agentrl/engine-server';
import { TrainerError } from '../errors.js';

/**
 * `agentrl serve --checkpoint DIR`: the project's own engine server (@agentrl/engine-server) as a
 * process, speaking vLLM's OpenAI-compatible and SGLang's native APIs, so that `--engine URL` runs
 * can be used and tested on one machine. Runs until SIGINT / SIGTERM.
 */
export async function runEngineServeCommand(argv: string[]): Promise<number> {
  let options: ReturnType<typeof parseServeArgs>;
  try {
    options = parseServeArgs(argv);
  } catch (err) {
    throw new TrainerError('USAGE', (err as Error).message.replace('agentrl-engine-server', 'agentrl serve'));
  }
  if (options === null) {
    process.stdout.write(`${SERVE_USAGE.replace('agentrl-engine-server', 'agentrl serve')}\n`);
    return 0;
  }
  const server = await serveCheckpoint(options);
  await new Promise<void>((resolve) => server.app.server.once('close', () => resolve()));
  return 0;
}
