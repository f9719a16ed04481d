const ANY = /\0/;

/**
 * Makes V8 flatten a rope string (built by `+` or `repeat`) before a charCodeAt loop; on a rope each
 * access walks the tree and a 24 KB scan costs milliseconds. Running a regex over it flattens it.
 */
export function flatten(s: string): string {
  ANY.test(s);
  return s;
}
