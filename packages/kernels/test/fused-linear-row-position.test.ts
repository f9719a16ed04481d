import { describe, expect, it } from 'vitest';
import { fusedLinearPolicyLoss } from '../src/index.js';
import { rng } from './fixtures.js';

/**
 * True on-policy needs a token's logprob to be a function of its own hidden row only: the rollout
 * scores a few rows per decode step, the trainer recomputes the same rows at arbitrary places in a
 * packed micro-batch (any row of a register panel, the last rows of the batch, another 192-token
 * block). The kernel's logits GEMM must therefore use the same arithmetic for every row position.
 */
describe('fused-linear CPU kernel: a row gets bit-identical logprobs at every row position', () => {
  const K = 7; // probe rows, scored alone and inside batches
  function rows(n: number, H: number, seed: number): Float32Array {
    const r = rng(seed);
    const out = new Float32Array(n * H);
    for (let i = 0; i < out.length; i++) out[i] = r() * 2 - 1;
    return out;
  }
  function score(
    hidden: Float32Array,
    targets: Int32Array,
    weight: Float32Array,
    H: number,
    V: number,
    temperature: number,
  ) {
    const T = targets.length;
    return fusedLinearPolicyLoss(
      {
        hidden,
        weight,
        hiddenSize: H,
        vocabSize: V,
        targets,
        oldLogprobs: new Float32Array(T),
        advantages: new Float32Array(T),
        lossMask: new Uint8Array(T),
        cuSeqlens: Int32Array.of(0, T),
      },
      { backend: 'cpu', temperature },
    ).logprobs;
  }

  // H = 320 spans two 256-long k-blocks of the GEMM (the second one accumulates into the first's
  // sums with alpha = 1 / temperature); V = 300 and 530 end on a partial 32-wide column panel. The
  // kernel's former 4 x 32 multiply gave rows of a 4-row block other sums in those last columns
  // than leftover rows (1 float32 ulp: H 64 V 300 and H 320 V 300 failed here).
  it.each([
    [64, 530, 1],
    [64, 530, 0.7],
    [320, 530, 0.7],
    [320, 300, 1],
    [64, 300, 1],
  ] as const)('H %i V %i temperature %d', (H, V, temperature) => {
    const weight = rows(V, H, 11).map((w) => (w * 2) / Math.sqrt(H));
    const probe = rows(K, H, 12);
    const probeTargets = Int32Array.from({ length: K }, (_, i) => (i * 97 + 5) % V);
    const alone = Array.from(
      { length: K },
      (_, i) =>
        score(probe.slice(i * H, (i + 1) * H), probeTargets.subarray(i, i + 1), weight, H, V, temperature)[0],
    );
    // Offsets through a whole 12-row panel and 4-row block, the ends of a batch, and the edge of the
    // kernel's 192-token blocks; `after` rows follow the probes (0 = probes are the last rows).
    const offsets = [...Array.from({ length: 14 }, (_, i) => i), 23, 185, 186, 189, 190, 191, 192];
    let checked = 0;
    for (const before of offsets) {
      for (const after of [0, 1, 2, 3, 5, 12]) {
        const T = before + K + after;
        const hidden = rows(T, H, 100 + before * 13 + after);
        hidden.set(probe, before * H);
        const targets = Int32Array.from({ length: T }, (_, t) => (t * 31 + 3) % V);
        targets.set(probeTargets, before);
        const lp = score(hidden, targets, weight, H, V, temperature);
        for (let i = 0; i < K; i++) {
          if (lp[before + i] !== alone[i]) {
            throw new Error(
              `probe row ${i} at row ${before + i} of ${T}: ${lp[before + i]} vs ${alone[i]} scored alone`,
            );
          }
          checked++;
        }
      }
    }
    expect(checked).toBe(offsets.length * 6 * K);
  });
});
