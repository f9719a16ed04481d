import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { TrainerError } from '../errors.js';
import { readMetrics } from '../run/metrics-log.js';
import { renderReport } from '../run/report.js';
import { parseArgs } from './args.js';
import { REPORT_FLAGS } from './commands.js';
import { renderHelp } from './help.js';

/** `agentrl report runs/a [runs/b ...] [--out file.html]`: one page, the runs' curves overlaid. */
export async function runReportCommand(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(
      renderHelp(
        'agentrl report <run-dir> [<run-dir> ...] [--out report.html]',
        'Renders the training curves of one or more runs into one self-contained HTML page (inline SVG, no\n' +
          'scripts): the first run solid, the others dashed. Use it for ablations, e.g. runs/tiny vs runs/tiny-noroc.',
        REPORT_FLAGS,
        false,
      ),
    );
    return 0;
  }
  const args = parseArgs(argv, REPORT_FLAGS);
  if (args.positionals.length === 0)
    throw new TrainerError('USAGE', 'report needs at least one run directory');
  const runs = args.positionals.map((dir) => {
    const metrics = join(dir, 'metrics.jsonl');
    if (!existsSync(metrics))
      throw new TrainerError('RUN_DIR', `report: ${dir} has no metrics.jsonl; pass a runs/<name> directory`);
    const configPath = join(dir, 'config.json');
    const config = existsSync(configPath) ? JSON.parse(readFileSync(configPath, 'utf8')) : undefined;
    return { label: basename(resolve(dir)), records: readMetrics(metrics), config };
  });
  const out = typeof args.flags.out === 'string' ? args.flags.out : join(args.positionals[0]!, 'report.html');
  writeFileSync(out, renderReport(`agentrl: ${runs.map((r) => r.label).join(' vs ')}`, runs));
  process.stdout.write(`wrote ${out}\n`);
  return 0;
}
