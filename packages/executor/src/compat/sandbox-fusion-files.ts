// SandboxFusion's `files` and `fetch_files` (sandbox/server/sandbox_api.py RunCodeRequest: "a dict from file
// path to base64 encoded file content" and "a list of file paths to fetch after code execution";
// sandbox/runners/base.py restore_files and the fetch loop of run_commands). SandboxFusion itself joins any
// path to its temporary directory; here paths must stay inside the working directory, and sizes are capped.

/** Size limits of `files` and `fetch_files`: what one call may upload and get back. */
export const SANDBOX_FUSION_FILE_LIMITS = {
  /** files restored, at most */
  files: 256,
  /** decoded bytes of one restored file */
  fileBytes: 16 * 1024 * 1024,
  /** decoded bytes of all restored files (they live in the call's /tmp, itself capped by tmpMb) */
  totalBytes: 32 * 1024 * 1024,
  /** paths in fetch_files, at most */
  fetchFiles: 64,
  /** bytes of one fetched file */
  fetchFileBytes: 1024 * 1024,
  /** bytes of all fetched files */
  fetchTotalBytes: 4 * 1024 * 1024,
  /** characters of one path */
  pathChars: 1024,
} as const;

// no group repetition: a regex engine recurses per repeated group, and files reach megabytes
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * A path relative to the working directory, normalised (`./a//b` → `a/b`), or throws a message naming the
 * path and what to change: no absolute path, no `..`, no NUL, not empty.
 */
export function workdirPath(field: string, name: string): string {
  const bad = (why: string) => new Error(`${field}: path ${JSON.stringify(name)} ${why}`);
  if (name.length > SANDBOX_FUSION_FILE_LIMITS.pathChars)
    throw bad(`is longer than ${SANDBOX_FUSION_FILE_LIMITS.pathChars} characters`);
  if (name.includes('\0')) throw bad('holds a NUL character');
  if (name.startsWith('/')) throw bad('is absolute; give it relative to the working directory');
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw bad("has a '..' component; paths must stay in the working directory");
  if (parts.length === 0) throw bad('names no file');
  return parts.join('/');
}

/**
 * The files to restore, normalised path → base64, as restore_files would write them (entries whose content
 * is null, or whose name holds IGNORE_THIS_FILE, are skipped there and here). Throws on a bad path, bad
 * base64 or a size over SANDBOX_FUSION_FILE_LIMITS.
 */
export function filesToRestore(files: Record<string, string | null>): Record<string, string> {
  const L = SANDBOX_FUSION_FILE_LIMITS;
  const out: Record<string, string> = {};
  let total = 0;
  for (const [name, content] of Object.entries(files)) {
    if (content == null || name.includes('IGNORE_THIS_FILE')) continue;
    const path = workdirPath('files', name);
    if (path in out) throw new Error(`files: ${JSON.stringify(name)} names a file given twice`);
    if (content.length % 4 !== 0 || !BASE64.test(content))
      throw new Error(`files: the content of ${JSON.stringify(name)} is not base64`);
    const bytes = (content.length / 4) * 3 - (content.endsWith('==') ? 2 : content.endsWith('=') ? 1 : 0);
    if (bytes > L.fileBytes)
      throw new Error(`files: ${JSON.stringify(name)} is ${bytes} bytes, over the limit of ${L.fileBytes}`);
    total += bytes;
    out[path] = content;
  }
  const count = Object.keys(out).length;
  if (count > L.files) throw new Error(`files: ${count} files, over the limit of ${L.files}`);
  if (total > L.totalBytes)
    throw new Error(`files: ${total} bytes together, over the limit of ${L.totalBytes}; send fewer`);
  return out;
}

/** fetch_files checked: at most SANDBOX_FUSION_FILE_LIMITS.fetchFiles paths, each inside the directory. */
export function filesToFetch(names: readonly string[]): string[] {
  const L = SANDBOX_FUSION_FILE_LIMITS;
  if (names.length > L.fetchFiles)
    throw new Error(`fetch_files: ${names.length} paths, over the limit of ${L.fetchFiles}`);
  for (const name of names) workdirPath('fetch_files', name);
  return [...names];
}
