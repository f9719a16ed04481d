import { KernelError, KernelErrorCode } from '../errors.js';

export interface RowStats {
  /** [T] log-normaliser of each row of logits / temperature. */
  logZ: Float64Array;
  /** [T] logp of the target. */
  logp: Float64Array;
  /** [T] entropy of each row (only when asked). */
  entropy: Float64Array | undefined;
}

/**
 * The plain two-pass log-softmax in float64 (max, then sum of exponentials), the oracle the fused
 * streaming kernels are checked against. -inf logits are allowed (probability 0); NaN or +inf
 * logits, or a row that is all -inf, are an error naming the row.
 */
export function rowStats(
  logits: Float32Array,
  V: number,
  targets: Int32Array,
  temperature: number,
  withEntropy: boolean,
  argument = 'logits',
): RowStats {
  const T = targets.length;
  const logZ = new Float64Array(T);
  const logp = new Float64Array(T);
  const entropy = withEntropy ? new Float64Array(T) : undefined;
  for (let t = 0; t < T; t++) {
    const o = t * V;
    let m = Number.NEGATIVE_INFINITY;
    for (let j = 0; j < V; j++) {
      const x = logits[o + j]!;
      if (Number.isNaN(x) || x === Number.POSITIVE_INFINITY) {
        throw new KernelError(
          KernelErrorCode.INVALID_ARGUMENT,
          `has ${x} at row ${t}, column ${j}: logits must be finite or -inf`,
          { field: argument },
        );
      }
      const z = x / temperature;
      if (z > m) m = z;
    }
    if (m === Number.NEGATIVE_INFINITY) {
      throw new KernelError(
        KernelErrorCode.INVALID_ARGUMENT,
        `row ${t} is all -inf: no token has any probability`,
        { field: argument },
      );
    }
    let s = 0;
    let u = 0;
    for (let j = 0; j < V; j++) {
      const z = logits[o + j]! / temperature;
      if (z === Number.NEGATIVE_INFINITY) continue;
      const e = Math.exp(z - m);
      s += e;
      u += e * z;
    }
    const lz = m + Math.log(s);
    logZ[t] = lz;
    logp[t] = logits[o + targets[t]!]! / temperature - lz;
    if (entropy) entropy[t] = lz - u / s;
  }
  return { logZ, logp, entropy };
}
