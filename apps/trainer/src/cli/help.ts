import { PRESET_NAMES } from '../config/presets.js';
import { type CommandFlag, type ConfigScope, configOptionsOf } from './args.js';

/**
 * `--help` text: the command's own flags, then the config leaves it reads (every leaf, or those of
 * `withConfig` when it is a scope), generated from the zod schema.
 */
export function renderHelp(
  usage: string,
  summary: string,
  flags: CommandFlag[],
  withConfig: boolean | ConfigScope,
): string {
  const lines = [`usage: ${usage}`, '', summary, '', 'options:'];
  for (const f of flags) lines.push(row(`--${f.name}${f.value ? ` <${f.value}>` : ''}`, f.description));
  lines.push(row('--help', 'show this help'));
  if (withConfig) {
    lines.push(
      '',
      `config options (also settable in --config YAML/JSON; presets: ${PRESET_NAMES.join(', ')}):`,
    );
    let group = '';
    for (const o of configOptionsOf(withConfig === true ? undefined : withConfig)) {
      const top = o.path.length > 1 ? o.path[0]! : '';
      if (top !== group) {
        group = top;
        lines.push('');
      }
      const type = o.choices ? o.choices.join('|') : o.type === 'json' ? 'json' : o.type;
      const def = o.defaultValue === undefined ? '' : ` (default: ${JSON.stringify(o.defaultValue)})`;
      lines.push(
        row(`--${o.path.join('.')} <${type}${o.nullable ? '|null' : ''}>`, `${o.description}${def}`),
      );
      if (o.type === 'boolean')
        lines.push(row(`--no-${o.path.join('.')}`, `set ${o.path.join('.')} to false`));
    }
  }
  return `${lines.join('\n')}\n`;
}

function row(left: string, right: string): string {
  return left.length >= 34 ? `  ${left}\n  ${' '.repeat(34)}${right}` : `  ${left.padEnd(34)}${right}`;
}
