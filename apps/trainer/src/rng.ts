/**
 * Seeded randomness with resumable streams. Every random choice of a run draws from a stream named
 * by (seed, purpose, step...), so a resumed run re-derives the same streams from the step counter
 * alone and matches an uninterrupted one. sfc32 is hand-written (15 lines) because its whole state is
 * four uint32s that serialise into a checkpoint as-is.
 */
export class Rng {
  private s: Uint32Array;

  constructor(state: ArrayLike<number>) {
    this.s = Uint32Array.from(state);
    if (this.s.length !== 4) throw new Error('Rng state must be 4 uint32 words');
  }

  /** A stream derived from a seed and a path of labels, e.g. `Rng.derive(seed, 'rollout', step)`. */
  static derive(seed: number, ...labels: (string | number)[]): Rng {
    const h = hashSeed(seed, ...labels);
    const rng = new Rng([h, h ^ 0x9e3779b9, h ^ 0x243f6a88, h ^ 0xb7e15162]);
    for (let i = 0; i < 12; i++) rng.nextU32(); // decorrelate nearby seeds
    return rng;
  }

  nextU32(): number {
    const s = this.s;
    const t = (((s[0]! + s[1]!) >>> 0) + s[3]!) >>> 0;
    s[3] = (s[3]! + 1) >>> 0;
    s[0] = s[1]! ^ (s[1]! >>> 9);
    s[1] = (s[2]! + (s[2]! << 3)) >>> 0;
    s[2] = ((s[2]! << 21) | (s[2]! >>> 11)) >>> 0;
    s[2] = (s[2]! + t) >>> 0;
    return t;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextU32() / 4294967296;
  }

  /** Uniform integer in [lo, hi] inclusive. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** Fisher-Yates shuffle in place. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [items[i], items[j]] = [items[j]!, items[i]!];
    }
    return items;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  state(): number[] {
    return Array.from(this.s);
  }
}

/** FNV-1a over the seed and labels, finished with a murmur3 mix: a 31-bit non-negative seed. */
export function hashSeed(seed: number, ...labels: (string | number)[]): number {
  let h = 0x811c9dc5;
  const text = [seed, ...labels].join('\u0000');
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 1;
}
