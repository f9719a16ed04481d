import { exitStatusOf, TrainerError } from '../errors.js';
import { runAblationCommand } from './ablation-command.js';
import { runEngineServeCommand } from './engine-serve-command.js';
import { runEvalCommand } from './eval-command.js';
import { runReportCommand } from './report-command.js';
import { runServeCommand } from './serve-command.js';
import { runTrainCommand } from './train-command.js';

const USAGE = `usage: agentrl <command> [options]

commands:
  train            SFT cold start then GRPO-RoC stages; writes runs/<name>/ (see agentrl train --help)
  eval             avg@k pass@1 of a checkpoint or an engine URL (see agentrl eval --help)
  ablation         GRPO-RoC vs --no-roc over seeds, then one page with bands (agentrl ablation --help)
  report           one HTML page with the curves of one or more runs (ablations)
  serve            a checkpoint behind vLLM/SGLang-compatible HTTP (agentrl serve --checkpoint DIR)
  executor serve   the code-execution HTTP server (see agentrl executor serve --help)
  executor worker  a worker of the distributed (Redis) executor

\`pnpm train\` at the repository root builds what is needed and runs \`agentrl train\` with the tiny preset.
`;

/** Dispatches a command; returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'train':
        return await runTrainCommand(rest);
      case 'eval':
        return await runEvalCommand(rest);
      case 'report':
        return await runReportCommand(rest);
      case 'ablation':
        return await runAblationCommand(rest);
      case 'executor':
        return await runServeCommand(rest);
      case 'serve':
        return await runEngineServeCommand(rest);
      case undefined:
      case '--help':
      case '-h':
      case 'help':
        process.stdout.write(USAGE);
        return command === undefined ? 2 : 0;
      default:
        throw new TrainerError(
          'USAGE',
          `unknown command "${command}"; use train, eval, ablation, report, serve or executor serve`,
        );
    }
  } catch (err) {
    return reportError(err);
  }
}

/** One readable line (or block) for known errors; the stack only for bugs. */
export function reportError(err: unknown): number {
  if (err instanceof TrainerError) {
    process.stderr.write(`agentrl: ${err.message}\n`);
    return exitStatusOf(err);
  }
  const e = err as { name?: string; code?: unknown; message?: string; stack?: string };
  if (e && typeof e.code === 'string' && typeof e.message === 'string' && e.name && e.name !== 'Error') {
    process.stderr.write(`agentrl: ${e.message}\n`);
    return 1;
  }
  process.stderr.write(`agentrl: unexpected error: ${e?.stack ?? String(err)}\n`);
  return 1;
}
