import type { PolicyLossConfig } from '../config.js';

/**
 * The weight of each token's loss in the aggregate (0 on masked-out tokens): the aggregate is
 * linear in the token losses, loss = Σ_t w_t l_t. Same definitions as @agentrl/grpo's
 * `lossGradientWeights` (verl's agg_loss on a padded batch):
 * token-mean 1/N; seq-mean-token-sum 1/S; seq-mean-token-mean 1/(S max(n_s, 1));
 * seq-mean-token-sum-norm 1/horizon. N, S overridable by tokenCount / seqCount.
 */
export function aggregationWeights(
  lossMask: Uint8Array,
  cuSeqlens: Int32Array,
  cfg: PolicyLossConfig,
): Float64Array {
  const T = lossMask.length;
  const S = cuSeqlens.length - 1;
  const w = new Float64Array(T);
  let n = 0;
  for (let t = 0; t < T; t++) n += lossMask[t] === 1 ? 1 : 0;
  const seqs = cfg.seqCount ?? S;
  const tokens = cfg.tokenCount ?? n;
  for (let s = 0; s < S; s++) {
    const a = cuSeqlens[s]!;
    const b = cuSeqlens[s + 1]!;
    let ws: number;
    switch (cfg.aggregation) {
      case 'token-mean':
        ws = tokens === 0 ? 0 : 1 / tokens;
        break;
      case 'seq-mean-token-sum':
        ws = seqs === 0 ? 0 : 1 / seqs;
        break;
      case 'seq-mean-token-mean': {
        let c = 0;
        for (let t = a; t < b; t++) c += lossMask[t] === 1 ? 1 : 0;
        ws = seqs === 0 ? 0 : 1 / (seqs * Math.max(c, 1));
        break;
      }
      case 'seq-mean-token-sum-norm':
        ws = 1 / (cfg.horizon as number);
        break;
    }
    for (let t = a; t < b; t++) w[t] = lossMask[t] === 1 ? ws : 0;
  }
  return w;
}
