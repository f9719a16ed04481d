/**
 * A remaining time as a person reads it: `45s`, `2m05s`, `1h02m`, and `--` while unknown.
 * cli-progress hands its formatter the strings `NULL` and `INF` before the rate is known (its own
 * formatter prints their last two letters, `LL` and `NF`), and its rounding to 5 s made `2m60s`.
 */
export function formatEta(t: number | string): string {
  if (typeof t !== 'number' || !Number.isFinite(t) || t < 0) return '--';
  const s = Math.round(t);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  const m = Math.round(s / 60);
  return `${Math.floor(m / 60)}h${pad(m % 60)}m`;
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}
