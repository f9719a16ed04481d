import { afterAll, describe, expect, it } from 'vitest';
import {
  bf16ToFloat32,
  disposeWebGpu,
  float32ToBf16,
  KernelErrorCode,
  listBackends,
  policyLoss,
  policyLossSync,
} from '../src/index.js';
import { expectMatches } from './compare.js';
import { makeInputs } from './fixtures.js';

afterAll(() => disposeWebGpu());
const backends = await listBackends();

describe('bf16 logits', () => {
  it('round-trips through float32ToBf16 / bf16ToFloat32 with round-to-nearest-even', () => {
    // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: to even (1); 1 + 3 * 2^-9 rounds up
    const x = Float32Array.from([0, -0, 1, -2.5, 1 + 2 ** -8, 1 + 3 * 2 ** -9, Number.NEGATIVE_INFINITY]);
    expect(Array.from(bf16ToFloat32(float32ToBf16(x)))).toEqual([
      0,
      -0,
      1,
      -2.5,
      1,
      1 + 2 ** -7,
      Number.NEGATIVE_INFINITY,
    ]);
    const big = bf16ToFloat32(float32ToBf16(Float32Array.of(3e38)))[0]!;
    expect(Math.abs(big - 3e38) / 3e38).toBeLessThan(2 ** -8);
    expect(Number.isNaN(bf16ToFloat32(float32ToBf16(Float32Array.of(Number.NaN)))[0])).toBe(true);
  });

  it('the reference takes bf16 bits and equals the fp32 run on the widened values', () => {
    const inp = makeInputs({ seqLens: [5, 4], V: 300, seed: 21 });
    const bits = float32ToBf16(inp.logits);
    const viaBf16 = policyLossSync({ ...inp, logits: bits }, { backend: 'reference', computeEntropy: true });
    const viaF32 = policyLossSync(
      { ...inp, logits: bf16ToFloat32(bits) },
      { backend: 'reference', computeEntropy: true },
    );
    expectMatches(viaBf16, viaF32, 1e-12);
  });

  it.each(['cpu', 'webgpu'] as const)(
    '%s refuses bf16 with a message that says where it runs',
    async (backend) => {
      const inp = makeInputs({ seqLens: [2], V: 10, seed: 1 });
      await expect(
        policyLoss({ ...inp, logits: float32ToBf16(inp.logits) }, { backend }),
      ).rejects.toMatchObject({
        code: KernelErrorCode.INVALID_ARGUMENT,
        message: expect.stringMatching(/logits are bf16.*cuda, hip or reference/),
      });
    },
  );

  it('bf16 with inPlace is refused (dlogits are fp32)', () => {
    const inp = makeInputs({ seqLens: [2], V: 10, seed: 1 });
    expect(() =>
      policyLossSync({ ...inp, logits: float32ToBf16(inp.logits) }, { backend: 'reference', inPlace: true }),
    ).toThrow(/inPlace needs fp32 logits/);
  });

  describe.each(['cuda', 'hip'] as const)('%s', (name) => {
    const b = backends.find((x) => x.name === name)!;
    it.skipIf(!b.runnable)(
      `bf16 logits agree with the reference${b.runnable ? '' : ` (skipped: ${name} not runnable here: ${b.detail})`}`,
      async () => {
        const inp = makeInputs({ seqLens: [7, 9], V: 5000, seed: 22 });
        const bits = float32ToBf16(inp.logits);
        const ref = await policyLoss(
          { ...inp, logits: bits },
          { backend: 'reference', computeEntropy: true },
        );
        const got = await policyLoss({ ...inp, logits: bits }, { backend: name, computeEntropy: true });
        expectMatches(got, ref);
      },
    );
  });
});
