/**
 * Keeps the head and the tail of `text` and replaces the middle with a marker when it is longer
 * than `maxChars` (tool output is truncated in the middle, as in rStar2-Agent: the start shows what
 * ran, the end shows the error or the result). The result is never longer than `maxChars` unless
 * `maxChars` is smaller than the marker itself.
 */
export function truncateMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  // The marker's length depends on the number it holds; size it for the largest possible number.
  const markerLength = `\n...[${text.length} characters truncated]...\n`.length;
  const keep = Math.max(0, maxChars - markerLength);
  const head = Math.ceil(keep / 2);
  const tail = keep - head;
  const dropped = text.length - head - tail;
  return (
    text.slice(0, head) +
    `\n...[${dropped} characters truncated]...\n` +
    (tail > 0 ? text.slice(text.length - tail) : '')
  );
}
