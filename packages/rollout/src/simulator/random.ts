/** A seeded PRNG (mulberry32): the simulator's draws are reproducible and paired across schedulers. */
export function createRandom(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const normal = () => {
    const u = Math.max(next(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * next());
  };
  return {
    next,
    /** Lognormal with the given median and log-space sigma: heavy right tail. */
    lognormal: (median: number, sigma: number) => median * Math.exp(sigma * normal()),
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
  };
}
export type Random = ReturnType<typeof createRandom>;
