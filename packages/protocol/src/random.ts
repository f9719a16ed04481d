/**
 * The one seeded PRNG and string hash of agentrl. sfc32 (Chris Doty-Humphrey's small fast counting
 * generator, which passes PractRand) is written here by hand because its whole state is four uint32
 * words that go into a checkpoint as they are and a resumed run continues the same stream; a
 * dependency for 40 lines would cost more than it saves. FNV-1a with a murmur3 finaliser names
 * streams from labels (seed, purpose, step, prompt id).
 */

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a over UTF-16 code units, continuing from `h` (the FNV offset basis by default): a uint32. */
export function fnv1a(text: string, h: number = FNV_OFFSET): number {
  let x = h >>> 0;
  for (let i = 0; i < text.length; i++) x = Math.imul(x ^ text.charCodeAt(i), FNV_PRIME);
  return x >>> 0;
}

/** FNV-1a of one more 32-bit word, folded in whole (not byte by byte). */
export function fnv1aWord(h: number, word: number): number {
  return Math.imul(h ^ word, FNV_PRIME) >>> 0;
}

/** murmur3's 32-bit finaliser: spreads every input bit over the output. */
export function fmix32(h: number): number {
  let x = h >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** A 31-bit non-negative seed named by a base seed and a path of labels, e.g. (seed, 'rollout', 7). */
export function hashSeed(seed: number, ...labels: (string | number)[]): number {
  return fmix32(fnv1a([seed, ...labels].join('\u0000'))) >>> 1;
}

function splitmix32(state: number): [number, number] {
  const s = (state + 0x9e3779b9) | 0;
  let z = s;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return [s, (z ^ (z >>> 16)) >>> 0];
}

/** sfc32 with a serialisable state. */
export class Rng {
  private readonly s: Uint32Array;

  /** From a saved `state()` (four uint32 words). */
  constructor(state: ArrayLike<number>) {
    if (state.length !== 4) throw new RangeError(`Rng: state must be 4 uint32 words, got ${state.length}`);
    this.s = Uint32Array.from(state);
  }

  /** A stream named by a seed and labels: `Rng.derive(seed, 'rollout', step)`. */
  static derive(seed: number, ...labels: (string | number)[]): Rng {
    const h = hashSeed(seed, ...labels);
    return new Rng([h, h ^ 0x9e3779b9, h ^ 0x243f6a88, h ^ 0xb7e15162]).warm();
  }

  /** A stream from a 32-bit seed and a numeric stream id, the state filled by splitmix32. */
  static seeded(seed: number, stream = 0): Rng {
    const [s1, a] = splitmix32((seed ^ Math.imul(stream, 0x27d4eb2f)) | 0);
    const [s2, b] = splitmix32(s1);
    const [, c] = splitmix32(s2 ^ stream);
    return new Rng([a, b, c, 1]).warm();
  }

  /** sfc32's first outputs are weakly mixed: every constructor above discards twelve. */
  private warm(): this {
    for (let i = 0; i < 12; i++) this.nextU32();
    return this;
  }

  /** A uniform unsigned 32-bit integer. */
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

  /** Uniform in [0, 1) with 32 bits of resolution. */
  next(): number {
    return this.nextU32() / 4294967296;
  }

  /** A uniform integer in [0, bound), exactly uniform (rejection sampling), bound in [1, 2^32]. */
  below(bound: number): number {
    if (!(bound >= 1 && bound <= 0x1_0000_0000)) {
      throw new RangeError(`Rng.below: bound ${bound} is outside [1, 2^32]`);
    }
    const limit = 0x1_0000_0000 - (0x1_0000_0000 % bound);
    for (;;) {
      const x = this.nextU32();
      if (x < limit) return x % bound;
    }
  }

  /** A uniform integer in [lo, hi], both included. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** A standard normal draw (Box-Muller, two uniforms a draw, so the state alone is the stream). */
  normal(): number {
    const u = Math.max(this.next(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  /** Lognormal with the given median and log-space sigma. */
  lognormal(median: number, sigma: number): number {
    return median * Math.exp(sigma * this.normal());
  }

  /** Fisher-Yates shuffle in place; returns `items`. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [items[i], items[j]] = [items[j]!, items[i]!];
    }
    return items;
  }

  /** One element, uniformly. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('Rng.pick: no items to pick from');
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** The four state words, for a checkpoint. */
  state(): number[] {
    return Array.from(this.s);
  }
}
