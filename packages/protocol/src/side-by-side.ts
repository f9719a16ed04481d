/**
 * Helpers for benches that time other source trees of a package beside this one in one process
 * (`VARIANTS=pre23=/path/to/packages/x,...`), in interleaved rounds whose order alternates, so that load
 * from other processes falls on every tree alike; the figures quoted are medians over rounds.
 */

/** One source tree to measure beside this one: a name for the tables and the package directory. */
export interface Variant {
  name: string;
  dir: string;
}

const NAME = /^[A-Za-z0-9][\w.-]*$/;

/**
 * Reads `name=<package dir>,name=<package dir>` (empty or unset: none). Throws an Error naming the bad
 * item and the expected form on a malformed item, a duplicate or reserved name (`reserved`, default
 * `this`: the tree the bench runs from), or a directory `exists` rejects.
 */
export function parseVariants(
  spec: string | undefined,
  opts: { envName?: string; reserved?: readonly string[]; exists?: (dir: string) => boolean } = {},
): Variant[] {
  const env = opts.envName ?? 'VARIANTS';
  const reserved = opts.reserved ?? ['this'];
  const form = `${env} takes name=<package dir>[,name=<package dir>...], e.g. ${env}=pre23=/work/pre23/packages/executor`;
  const out: Variant[] = [];
  for (const item of (spec ?? '').split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const eq = item.indexOf('=');
    const name = eq < 0 ? '' : item.slice(0, eq).trim();
    const dir = eq < 0 ? '' : item.slice(eq + 1).trim();
    if (!NAME.test(name) || dir === '')
      throw new Error(`${env}: '${item}' is not name=<package dir> (name: letters, digits, _ . -). ${form}`);
    if (reserved.includes(name))
      throw new Error(
        `${env}: the name '${name}' is reserved for the tree the bench runs from; pick another`,
      );
    if (out.some((v) => v.name === name)) throw new Error(`${env}: the name '${name}' is given twice`);
    if (opts.exists && !opts.exists(dir))
      throw new Error(
        `${env}: ${name}=${dir}: no such package directory (give the tree's packages/<name> path)`,
      );
    out.push({ name, dir });
  }
  return out;
}

/** The order to run `items` in on round `round`: as given on even rounds, reversed on odd ones. */
export function alternating<T>(items: readonly T[], round: number): T[] {
  return round % 2 === 0 ? [...items] : [...items].reverse();
}

/** The median of `xs` (the upper one of an even count); NaN when empty. Does not reorder `xs`. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  return [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;
}
