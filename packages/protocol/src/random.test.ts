import { describe, expect, it } from 'vitest';
import {
  AgentrlError,
  defineErrorCodes,
  describeErrorCode,
  errorClass,
  errorCode,
  isAgentrlError,
} from './errors.js';
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

  // Checked draw for draw (1000 draws, 40 seed/stream pairs, below() too) against the two
  // generators this one replaced before they were deleted; pinned here so RoC keeps its choices
  // and a resumed run from an older checkpoint keeps its data order.
  it("reproduces grpo's old createRng(seed, stream) and the trainer's old Rng.derive", () => {
    const roc = Rng.seeded(42, fnv1a('p-17'));
    expect(fnv1a('p-17')).toBe(3441361766);
    expect(Array.from({ length: 4 }, () => roc.nextU32())).toEqual([
      174066462, 701615920, 1741365933, 1368350134,
    ]);
    const trainer = Rng.derive(1, 'rollout', 3);
    expect(hashSeed(1, 'rollout', 3)).toBe(1963371762);
    expect(Array.from({ length: 4 }, () => trainer.nextU32())).toEqual([
      2698013397, 1178696878, 1885573290, 1723917077,
    ]);
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

  it('takes a key or a full code at call sites and refuses anything else', () => {
    expect(errorCode(Codes, 'GONE')).toBe('DEMO_GONE');
    expect(errorCode(Codes, Codes.BAD_INPUT)).toBe('DEMO_BAD_INPUT');
    expect(() => errorCode(Codes, 'OTHER_GONE' as 'GONE')).toThrow(
      /"OTHER_GONE" is neither a key nor a code/,
    );
  });

  it('makes a package error class: name, full code, scope and field in the message, cause kept', () => {
    class DemoError extends errorClass('DemoError', Codes, 'demo') {}
    const cause = new Error('root');
    const err = new DemoError('BAD_INPUT', 'is 3; use 1 or 2', { field: 'options.n', cause });
    expect(err).toBeInstanceOf(AgentrlError);
    expect(err).toBeInstanceOf(DemoError);
    expect([err.name, err.code, err.field, err.cause]).toEqual([
      'DemoError',
      'DEMO_BAD_INPUT',
      'options.n',
      cause,
    ]);
    expect(err.message).toBe('demo: options.n is 3; use 1 or 2');
    const bare = new (errorClass('BareError', Codes))(Codes.GONE, 'gone');
    expect([bare.message, bare.field]).toEqual(['gone', undefined]);
  });

  it('refuses keys and prefixes that are not upper snake case', () => {
    expect(defineErrorCodes('MATH_VERIFY', { WORKER_FAILED: '' }).WORKER_FAILED).toBe(
      'MATH_VERIFY_WORKER_FAILED',
    );
    expect(() => defineErrorCodes('demo', { A: '' })).toThrow(/prefix "demo"/);
    expect(() => defineErrorCodes('DEMO_', { A: '' })).toThrow(/prefix "DEMO_"/);
    expect(() => defineErrorCodes('DEMO', { badKey: '' })).toThrow(/key "badKey"/);
  });
});
