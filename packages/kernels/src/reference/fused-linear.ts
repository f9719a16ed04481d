import type { PolicyLossConfig } from '../config.js';
import type { FusedLinearInputs, FusedLinearResult } from '../types.js';
import { referencePolicyLoss } from './policy-loss.js';

/**
 * The fused-linear loss the plain way: materialise logits = hidden @ weight^T (float64 sums),
 * run the reference loss, then dHidden = dlogits @ weight and dWeight = dlogits^T @ hidden.
 * O(T V) memory on purpose: it is the oracle and the baseline of the memory benchmark.
 */
export function referenceFusedLinear(inp: FusedLinearInputs, cfg: PolicyLossConfig): FusedLinearResult {
  const { hidden, weight, hiddenSize: H, vocabSize: V } = inp;
  const T = inp.targets.length;
  const logits = new Float32Array(T * V);
  for (let t = 0; t < T; t++) {
    for (let v = 0; v < V; v++) {
      let acc = 0;
      for (let k = 0; k < H; k++) acc += hidden[t * H + k]! * weight[v * H + k]!;
      logits[t * V + v] = acc;
    }
  }
  const r = referencePolicyLoss({ ...inp, logits, vocabSize: V }, cfg, { inPlace: true });
  const dHidden = new Float32Array(T * H);
  const dWeight = new Float32Array(V * H);
  const accH = new Float64Array(H);
  for (let t = 0; t < T; t++) {
    accH.fill(0);
    for (let v = 0; v < V; v++) {
      const g = r.dlogits[t * V + v]!;
      if (g === 0) continue;
      for (let k = 0; k < H; k++) accH[k]! += g * weight[v * H + k]!;
    }
    for (let k = 0; k < H; k++) dHidden[t * H + k] = accH[k]!;
  }
  for (let v = 0; v < V; v++) {
    accH.fill(0);
    for (let t = 0; t < T; t++) {
      const g = r.dlogits[t * V + v]!;
      if (g === 0) continue;
      for (let k = 0; k < H; k++) accH[k]! += g * hidden[t * H + k]!;
    }
    for (let k = 0; k < H; k++) dWeight[v * H + k] = accH[k]!;
  }
  return { loss: r.loss, dHidden, dWeight, logprobs: r.logprobs, metrics: r.metrics };
}
