/**
 * A tiny seeded PRNG (sfc32, seeded through splitmix32). Hand-written because the algorithm needs
 * only uniform 32-bit draws and per-group streams, and a dependency for 30 lines would cost more
 * than it saves; sfc32 passes PractRand and is the generator many JS libraries ship.
 */
export interface Rng {
  /** A uniform unsigned 32-bit integer. */
  nextU32(): number;
  /** A uniform integer in [0, bound), exactly uniform (rejection sampling), bound in [1, 2^32]. */
  below(bound: number): number;
}

function splitmix32(state: number): [number, number] {
  const s = (state + 0x9e3779b9) | 0;
  let z = s;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return [s, (z ^ (z >>> 16)) >>> 0];
}

/** FNV-1a over UTF-16 code units: a stable 32-bit hash for deriving per-group streams from ids. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** Creates an sfc32 generator from a 32-bit seed and an optional stream id (e.g. a prompt-id hash). */
export function createRng(seed: number, stream = 0): Rng {
  let s = (seed ^ Math.imul(stream, 0x27d4eb2f)) | 0;
  let a: number;
  let b: number;
  let c: number;
  [s, a] = splitmix32(s);
  [s, b] = splitmix32(s);
  [s, c] = splitmix32(s ^ stream);
  let d = 1;
  const nextU32 = (): number => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return t >>> 0;
  };
  // Warm up: sfc32's first outputs are weakly mixed.
  for (let i = 0; i < 12; i++) nextU32();
  return {
    nextU32,
    below(bound: number): number {
      if (!(bound >= 1 && bound <= 0x1_0000_0000))
        throw new RangeError(`rng.below: bound ${bound} is outside [1, 2^32]`);
      // Rejection sampling: draw until the value falls below the largest multiple of bound.
      const limit = 0x1_0000_0000 - (0x1_0000_0000 % bound);
      for (;;) {
        const x = nextU32();
        if (x < limit) return x % bound;
      }
    },
  };
}
