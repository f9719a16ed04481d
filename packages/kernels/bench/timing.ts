/** Median wall time of `runs` calls after one warm-up, in seconds. */
export async function medianSeconds(runs: number, fn: () => unknown): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    times.push((performance.now() - t0) / 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

export const GB = 1e9;
export const fmt = (x: number, d = 2) => x.toFixed(d);
