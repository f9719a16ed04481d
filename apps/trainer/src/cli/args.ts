import { type ParseArgsConfig, parseArgs as parseArgv } from 'node:util';
import { distance } from 'fastest-levenshtein';
import { setPath } from '../config/merge.js';
import { type ConfigOption, findOption, listConfigOptions } from '../config/options.js';
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

/** The config options a command reads (`agentrl eval` has no use for SFT and RL schedules). */
export interface ConfigScope {
  command: string;
  /** Dotted option paths or their prefixes (`eval` covers `eval.k`). */
  uses: readonly string[];
}

/** The config leaves a command accepts and lists in its --help: all of them without a scope. */
export function configOptionsOf(scope?: ConfigScope): ConfigOption[] {
  if (!scope) return listConfigOptions();
  return listConfigOptions().filter((o) => {
    const dotted = o.path.join('.');
    return scope.uses.some((u) => dotted === u || dotted.startsWith(`${u}.`));
  });
}

/** What a declared option name stands for: a command flag, or a config leaf (negated: `--no-<leaf>`). */
type Target = { flag: CommandFlag } | { option: ConfigOption; negated: boolean };

/**
 * Parses `--flag value`, `--flag=value`, `--no-<bool>` and `--<config.path> value` with `node:util`
 * parseArgs over a table of the command's flags and every config leaf. Non-strict tokens, checked
 * here: strict mode would refuse `--rl.n -1` (a value that starts with a dash) and `--rl.roc=false`;
 * unknown names and missing values get the errors below. Command flags win over config leaves;
 * config values are converted to the leaf's type and checked later by zod.
 */
export function parseArgs(argv: string[], commandFlags: CommandFlag[], scope?: ConfigScope): ParsedArgs {
  const targets = targetTable(commandFlags, scope);
  const options: NonNullable<ParseArgsConfig['options']> = {};
  for (const [name, t] of targets)
    options[name] = {
      type: takesValue(t) ? 'string' : 'boolean',
      multiple: 'flag' in t && !!t.flag.repeatable,
    };
  const { tokens } = parseArgv({ args: argv, options, strict: false, allowPositionals: true, tokens: true });
  const out: ParsedArgs = { flags: {}, overrides: {}, positionals: [] };
  let boolWord = -1; // index of a `true`/`false` consumed as the value of the boolean leaf before it
  for (const token of tokens) {
    if (token.kind === 'positional') {
      if (token.index !== boolWord) out.positionals.push(token.value);
      continue;
    }
    if (token.kind === 'option-terminator') continue;
    const target = targets.get(token.name);
    if (!target) {
      const leaf = findOption(token.name.replace(/^no-/, ''));
      if (leaf && scope)
        throw new TrainerError(
          'USAGE',
          `${token.rawName} is not used by agentrl ${scope.command}; run agentrl ${scope.command} --help for its options`,
        );
      throw new TrainerError('USAGE', unknownOption(token.rawName, [...targets.keys()]));
    }
    let value = takesValue(target) ? requireValue(token.name, token.value, token.inlineValue) : token.value;
    if (!takesValue(target) && 'option' in target && !target.negated && value === undefined) {
      const next = argv[token.index + 1];
      if (next === 'true' || next === 'false') {
        value = next;
        boolWord = token.index + 1;
      }
    }
    if ('flag' in target) applyFlag(out, target.flag, value);
    else if (target.negated) {
      if (value !== undefined) throw new TrainerError('USAGE', `--${token.name} takes no value; see --help`);
      setPath(out.overrides, target.option.path, false);
    } else setPath(out.overrides, target.option.path, convertValue(target.option, value ?? 'true'));
  }
  return out;
}

/**
 * Takes `flags` out of argv (with `node:util` parseArgs tokens) and leaves every other argument, in
 * order, for another parser: `agentrl ablation` keeps its own flags and hands the rest to each run.
 */
export function splitFlags(
  argv: string[],
  flags: CommandFlag[],
): { flags: ParsedArgs['flags']; rest: string[] } {
  const options: NonNullable<ParseArgsConfig['options']> = {};
  for (const f of flags) options[f.name] = { type: f.value ? 'string' : 'boolean' };
  const { tokens } = parseArgv({ args: argv, options, strict: false, allowPositionals: true, tokens: true });
  const out: ParsedArgs = { flags: {}, overrides: {}, positionals: [] };
  const taken = new Set<number>();
  for (const token of tokens) {
    const flag = token.kind === 'option' ? flags.find((f) => f.name === token.name) : undefined;
    if (!flag || token.kind !== 'option') continue;
    applyFlag(out, flag, flag.value ? requireValue(token.name, token.value, token.inlineValue) : token.value);
    taken.add(token.index);
    if (flag.value && !token.inlineValue) taken.add(token.index + 1);
  }
  return { flags: out.flags, rest: argv.filter((_, i) => !taken.has(i)) };
}

/**
 * `unknown option --rl.learningrate; did you mean --rl.lr?`: the closest accepted name by edit
 * distance when it is near enough to be a typo (a third of the name's length, at least 2 edits),
 * compared case-insensitively and also by the last dotted part (`--clipHigh` → `--rl.clipHigh`).
 */
export function unknownOption(rawName: string, accepted: readonly string[]): string {
  const name = rawName.replace(/^-+/, '');
  const lower = name.toLowerCase();
  let best: { name: string; d: number } | undefined;
  for (const candidate of accepted) {
    const c = candidate.toLowerCase();
    const d = Math.min(distance(lower, c), c.endsWith(`.${lower}`) ? 0 : Number.POSITIVE_INFINITY);
    if (!best || d < best.d) best = { name: candidate, d };
  }
  const hint =
    best && best.d <= Math.max(2, Math.floor(name.length / 3)) ? ` did you mean --${best.name}?` : '';
  return `unknown option ${rawName};${hint} run with --help to list every option`;
}

/** Every name the command accepts: its own flags first, then each config leaf and `--no-<bool leaf>`. */
function targetTable(commandFlags: CommandFlag[], scope?: ConfigScope): Map<string, Target> {
  const table = new Map<string, Target>();
  for (const option of configOptionsOf(scope)) {
    const name = option.path.join('.');
    table.set(name, { option, negated: false });
    if (option.type === 'boolean') table.set(`no-${name}`, { option, negated: true });
  }
  for (const flag of commandFlags) table.set(flag.name, { flag });
  return table;
}

function takesValue(t: Target): boolean {
  return 'flag' in t ? t.flag.value !== undefined : !t.negated && t.option.type !== 'boolean';
}

/**
 * The value of `--name`, or a usage error when there is none: at the end of argv, or when the next
 * argument is another option (`-1` and `--5` are values: negative numbers).
 */
function requireValue(name: string, value: string | undefined, inline: boolean | undefined): string {
  if (value === undefined || (!inline && value.startsWith('--') && !/^--?\d/.test(value)))
    throw new TrainerError('USAGE', `--${name} needs a value; see --help`);
  return value;
}

function applyFlag(out: ParsedArgs, flag: CommandFlag, value: string | undefined): void {
  if (!flag.value && value !== undefined)
    throw new TrainerError('USAGE', `--${flag.name} takes no value; see --help`);
  if (flag.sets) {
    const target = findOption(flag.sets.path);
    const converted =
      value !== undefined && target ? convertValue(target, value) : (value ?? flag.sets.value);
    setPath(out.overrides, flag.sets.path.split('.'), converted);
  } else if (flag.repeatable) {
    const prev = out.flags[flag.name];
    out.flags[flag.name] = [...(Array.isArray(prev) ? prev : []), value as string];
  } else {
    out.flags[flag.name] = value ?? true;
  }
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
