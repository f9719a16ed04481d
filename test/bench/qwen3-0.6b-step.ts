/**
 * What one RL step of a Qwen3-0.6B-shaped model costs on this machine's CPU backend (random
 * weights: the cost does not depend on them). `generate`: prefill + decode of 8 sequences;
 * `train`: one SFT-style forward + backward + AdamW update on 256 tokens (AGENTRL_BENCH_TOKENS) (fp32 master weights
 * and moments: ~10 GB). Run each phase in its own process:
 *   node --conditions=@agentrl/source --import tsx bench/qwen3-0.6b-step.ts generate|train
 */
import { createAdamW, createGenerator, createModel, packSequences } from '@agentrl/engine';

const QWEN3_0_6B = {
  architectures: ['Qwen3ForCausalLM'],
  model_type: 'qwen3',
  vocab_size: 151936,
  hidden_size: 1024,
  intermediate_size: 3072,
  num_hidden_layers: 28,
  num_attention_heads: 16,
  num_key_value_heads: 8,
  head_dim: 128,
  max_position_embeddings: 40960,
  rope_theta: 1_000_000,
  tie_word_embeddings: true,
};

const phase = process.argv[2];
const ids = (n: number, salt: number) =>
  Array.from({ length: n }, (_, i) => (i * 7919 + salt * 104729) % 150000);
const s = (t0: number) => (performance.now() - t0) / 1000;

if (phase === 'generate') {
  const model = createModel(QWEN3_0_6B, { seed: 1, training: false });
  const gen = createGenerator(model);
  const B = 8;
  const prompt = 256;
  const decode = 16;
  const t0 = performance.now();
  const out = await gen.generate(
    Array.from({ length: B }, (_, b) => ({
      cacheId: `s${b}`,
      tokenIds: ids(prompt, b),
      params: { maxNewTokens: decode, temperature: 1, seed: b },
    })),
  );
  const total = s(t0);
  const produced = out.reduce((n, r) => n + r.tokenIds.length, 0);
  console.log(
    JSON.stringify({
      phase,
      sequences: B,
      promptTokens: prompt,
      newTokens: produced,
      seconds: total,
      newTokensPerSec: produced / total,
    }),
  );
} else if (phase === 'train') {
  const model = createModel(QWEN3_0_6B, { seed: 1 });
  const opt = createAdamW(model, { lr: 1e-6 });
  const T = Number(process.env.AGENTRL_BENCH_TOKENS ?? 256);
  const seqs = [ids(T / 2, 1), ids(T / 2, 2)];
  const packed = packSequences(seqs);
  const mask = new Uint8Array(T).fill(1);
  const t0 = performance.now();
  const r = model.sftLoss(packed, mask, { normalizer: T });
  const tFwdBwd = s(t0);
  const t1 = performance.now();
  opt.step();
  console.log(
    JSON.stringify({
      phase,
      tokens: T,
      lossSum: r.lossSum,
      forwardBackwardSeconds: tFwdBwd,
      adamwSeconds: s(t1),
      tokensPerSec: T / tFwdBwd,
    }),
  );
} else {
  console.error('usage: qwen3-0.6b-step.ts generate|train');
  process.exit(2);
}
