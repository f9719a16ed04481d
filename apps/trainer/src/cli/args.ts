import { setPath } from '../config/merge.js';
import { type ConfigOption, findOption } from '../config/options.js';
import { TrainerError } from '../errors.js';

/** A command-level flag (not a config leaf): name, value placeholder, description. */
export interface CommandFlag {
  name: string;
  value?: string;
  description: string;
  /** Config leaf this flag is a shorthand for, with the value it sets (for value-less flags). */
  sets?: { path: string; value?: unknown };
  repeatable?: boolean;
}

export interface ParsedArgs {
  flags: Record<string, string | string[] | true>;
  overrides: Record<string, unknown>;
  positionals: string[];
}

/**
 * Parses `--flag value`, `--flag=value`, `--no-<bool>` and `--<config.path> value`. Command flags
 * come first; any other `--a.b` must be a config leaf, converted to its type and checked later by zod.
 */
export function parseArgs(argv: string[], commandFlags: CommandFlag[]): ParsedArgs {
  const out: ParsedArgs = { flags: {}, overrides: {}, positionals: [] };
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (!token.startsWith('--')) {
      out.positionals.push(token);
      continue;
    }
    const eq = token.indexOf('=');
    const name = token.slice(2, eq === -1 ? undefined : eq);
    const inline = eq === -1 ? undefined : token.slice(eq + 1);
    const takeValue = (): string => {
      if (inline !== undefined) return inline;
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith('--') && !/^--?\d/.test(next))) {
        throw new TrainerError('USAGE', `--${name} needs a value; see --help`);
      }
      i++;
      return next;
    };
    const flag = commandFlags.find((f) => f.name === name);
    if (flag) {
      const value = flag.value ? takeValue() : true;
      if (flag.sets) {
        const target = findOption(flag.sets.path);
        const converted =
          flag.value && target ? convertValue(target, value as string) : flag.value ? value : flag.sets.value;
        setPath(out.overrides, flag.sets.path.split('.'), converted);
      } else if (flag.repeatable) {
        const prev = out.flags[name];
        out.flags[name] = [...(Array.isArray(prev) ? prev : []), value as string];
      } else {
        out.flags[name] = value;
      }
      continue;
    }
    const negated = name.startsWith('no-') ? findOption(name.slice(3)) : undefined;
    if (negated?.type === 'boolean') {
      setPath(out.overrides, negated.path, false);
      continue;
    }
    const option = findOption(name);
    if (!option)
      throw new TrainerError('USAGE', `unknown option --${name}; run with --help to list every option`);
    const raw =
      option.type === 'boolean' && inline === undefined && !isBoolWord(argv[i + 1]) ? 'true' : takeValue();
    setPath(out.overrides, option.path, convertValue(option, raw));
  }
  return out;
}

function isBoolWord(s: string | undefined): boolean {
  return s === 'true' || s === 'false';
}

/** Converts a flag string to the option's type; zod then validates ranges and reports the path. */
export function convertValue(option: ConfigOption, raw: string): unknown {
  if (option.nullable && raw === 'null') return null;
  switch (option.type) {
    case 'boolean':
      if (raw === 'true') return true;
      if (raw === 'false') return false;
      return raw;
    case 'number':
    case 'integer': {
      const n = Number(raw);
      return raw.trim() !== '' && Number.isFinite(n) ? n : raw;
    }
    case 'json':
      try {
        return JSON.parse(raw);
      } catch {
        // `--task.digits 4,3` and `--task.trainFiles a.jsonl,b.parquet` read as lists.
        return raw.split(',').map((s) => (s.trim() !== '' && Number.isFinite(Number(s)) ? Number(s) : s));
      }
    default:
      return raw;
  }
}
