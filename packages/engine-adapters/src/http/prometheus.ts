/** One sample of the Prometheus text exposition format. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Parses the Prometheus text format (what vLLM serves at /metrics): `name{l="v",...} value`.
 * Comments and malformed lines are skipped.
 */
export function parsePrometheus(text: string): PromSample[] {
  const out: PromSample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.length === 0 || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    if (m[3]) {
      for (const l of m[3].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
        labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      }
    }
    const value = Number(m[4]);
    if (!Number.isNaN(value) || m[4] === 'NaN') out.push({ name: m[1]!, labels, value });
  }
  return out;
}

/** Sum of a metric over all its label sets (e.g. across engine indexes), or null when absent. */
export function metricSum(samples: readonly PromSample[], name: string): number | null {
  const hits = samples.filter((s) => s.name === name);
  return hits.length === 0 ? null : hits.reduce((a, s) => a + s.value, 0);
}

/** Formats one sample line. */
export function formatSample(name: string, labels: Record<string, string | number>, value: number): string {
  const l = Object.entries(labels)
    .map(([k, v]) => `${k}="${String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`)
    .join(',');
  return `${name}${l ? `{${l}}` : ''} ${value}`;
}
