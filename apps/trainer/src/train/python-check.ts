import { spawnSync } from 'node:child_process';
import { TrainerError } from '../errors.js';

/** Fails early, with the fix, when the embedded executor's Python is missing or too old. */
export function checkPython(python: string): string {
  const r = spawnSync(python, ['-c', 'import sys; print("%d.%d.%d" % sys.version_info[:3])'], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  if (r.error || r.status !== 0) {
    const why =
      (r.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT'
        ? 'was not found'
        : `failed (${r.error?.message ?? r.stderr.trim()})`;
    throw new TrainerError(
      'PYTHON_MISSING',
      `executor: Python at "${python}" ${why}. The tool the model calls runs Python 3: install it (apt-get install python3, brew install python), ` +
        'point --executor.python at an interpreter, or use a remote executor with --executor http://host:port or redis://host:port',
      ...(r.error ? [{ cause: r.error }] : []),
    );
  }
  const version = r.stdout.trim();
  const [major, minor] = version.split('.').map(Number);
  if (major !== 3 || (minor ?? 0) < 9) {
    throw new TrainerError(
      'PYTHON_MISSING',
      `executor: "${python}" is Python ${version}; the sandbox needs Python >= 3.9 (os.pidfd_open); set --executor.python`,
    );
  }
  return version;
}
