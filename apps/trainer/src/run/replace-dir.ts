import { mkdirSync, renameSync, rmSync } from 'node:fs';

/**
 * Writes a directory by filling `<final><suffix>` and renaming it over `final`, so a reader (a
 * resumed run, an inference server loading weights) never sees a half-written one.
 */
export async function replaceDir(
  final: string,
  write: (dir: string) => Promise<void>,
  suffix = '.tmp',
): Promise<void> {
  const tmp = `${final}${suffix}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  await write(tmp);
  rmSync(final, { recursive: true, force: true });
  renameSync(tmp, final);
}
