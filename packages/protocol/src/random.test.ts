import { describe, expect, it } from 'vitest';
import { AgentrlError, defineErrorCodes, describeErrorCode, isAgentrlError } from './errors.js';
import { fnv1a, hashSeed, Rng } from './random.js';

describe('Rng', () => {
  it('continues the same stream from a saved state', () => {
    const a = Rng.derive(7, 'rollout', 3);
    for (let i = 0; i < 5; i++) a.nextU32();
    const b = new Rng(a.state());
    expect(Array.from({ length: 8 }, () => b.nextU32())).toEqual(
      Array.from({ length: 8 }, () => a.nextU32()),
    );
  });

  it('names different streams by labels and by stream id', () => {
    expect(Rng.derive(7, 'a').nextU32()).not.toBe(Rng.derive(7, 'b').nextU32());
    expect(Rng.seeded(7, 1).nextU32()).not.toBe(Rng.seeded(7, 2).nextU32());
  });

  it('draws below(bound) exactly uniformly over small bounds', () => {
    const rng = Rng.seeded(1);
    const counts = [0, 0, 0];
    for (let i = 0; i < 30_000; i++) counts[rng.below(3)]!++;
    for (const c of counts) expect(Math.abs(c - 10_000)).toBeLessThan(400);
    expect(() => rng.below(0)).toThrow(/outside \[1, 2\^32\]/);
  });

  it('has a standard normal with mean 0 and variance 1', () => {
    const rng = Rng.seeded(3);
    let sum = 0;
    let sq = 0;
    const n = 20_000;
    for (let i = 0; i < n; i++) {
      const z = rng.normal();
      sum += z;
      sq += z * z;
    }
    expect(Math.abs(sum / n)).toBeLessThan(0.03);
    expect(Math.abs(sq / n - 1)).toBeLessThan(0.05);
  });

  it('refuses a state that is not four words', () => {
    expect(() => new Rng([1, 2, 3])).toThrow(/4 uint32 words/);
  });
});

describe('hashes', () => {
  it('matches the published FNV-1a test vectors', () => {
    expect(fnv1a('')).toBe(0x811c9dc5);
    expect(fnv1a('a')).toBe(0xe40c292c);
    expect(fnv1a('foobar')).toBe(0xbf9cf968);
  });

  it('gives 31-bit non-negative seeds', () => {
    for (let i = 0; i < 100; i++) {
      const h = hashSeed(i, 'x', i * 7);
      expect(h).toBeGreaterThanOrEqual(0);
      expect(h).toBeLessThan(2 ** 31);
    }
  });
});

describe('error base', () => {
  const Codes = defineErrorCodes('DEMO', { BAD_INPUT: 'the input was bad', GONE: 'it went away' });

  it('prefixes every code with the package prefix and keeps the descriptions', () => {
    expect(Codes.BAD_INPUT).toBe('DEMO_BAD_INPUT');
    expect(describeErrorCode(Codes.GONE)).toBe('it went away');
    const err = new AgentrlError(Codes.GONE, 'gone');
    expect(isAgentrlError(err, 'DEMO')).toBe(true);
    expect(isAgentrlError(err, 'OTHER')).toBe(false);
    expect(isAgentrlError(new Error('x'))).toBe(false);
  });

  it('refuses keys and prefixes that are not upper snake case', () => {
    expect(() => defineErrorCodes('demo', { A: '' })).toThrow(/prefix "demo"/);
    expect(() => defineErrorCodes('DEMO', { badKey: '' })).toThrow(/key "badKey"/);
  });
});
