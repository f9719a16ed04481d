import { executorCli } from '@agentrl/executor';
import { TrainerError } from '../errors.js';
import { serveFlags } from './commands.js';
import { renderHelp } from './help.js';

/**
 * `agentrl executor serve|worker`: the code-execution service of @agentrl/executor. The arguments
 * go to its CLI unchanged; this command only adds the help text.
 */
export async function runServeCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== 'serve' && sub !== 'worker')
    throw new TrainerError(
      'USAGE',
      'usage: agentrl executor serve|worker [options]; see agentrl executor serve --help',
    );
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(
      renderHelp(
        `agentrl executor ${sub} [options]`,
        sub === 'serve'
          ? 'Serves the sandboxed Python executor over HTTP: its batched API, the code-judge API of rStar2-Agent\n' +
              '(/run, /run/batch, /run/long-batch, /status), SandboxFusion /run_code, /health and /metrics. With\n' +
              '--redis it queues calls for `agentrl executor worker` processes on any machine instead of running them.'
          : 'Takes calls from the Redis queue in batches and runs them in a local sandboxed pool (at-least-once,\n' +
              'acknowledged; a killed worker leaves its batch to be retaken).',
        serveFlags(sub),
        false,
      ),
    );
    return 0;
  }
  await executorCli([sub, ...rest]);
  return typeof process.exitCode === 'number' ? process.exitCode : 0;
}
