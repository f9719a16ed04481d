// The GPU bench (run by scripts/gpu-check.sh on a machine with an NVIDIA GPU; it cannot run here):
// training tokens/s and model FLOP utilisation of a Qwen3-0.6B-shaped model (random init, bf16
// matrix products, sequence 4096, AdamW), KV-cache decode tokens/s at batch 1 and 64 with
// on-device sampling, and the fused-linear policy loss at T = 16K, V = 152K (time and workspace).
// The PyTorch + transformers side of each comparison is scripts/gpu-bench-torch.py, run by the same
// script on the same GPU; this file prints one JSON line per figure, prefixed "GPU_BENCH ".
import { loadNative } from '@agentrl/native';
import { it } from 'vitest';
import { packSequences } from '../src/batch.js';
import type { ModelConfigInput } from '../src/config.js';
import { type Device, deviceGemmPath, deviceUnavailableReason, sampleOnDevice } from '../src/device.js';
import { createModel } from '../src/model.js';
import { createAdamW } from '../src/optimizer.js';
import { GRPO_ROC_NATIVE_LOSS } from '../src/testing.js';

const device = (process.env.AGENTRL_GPU_TEST_DEVICE ?? 'cuda') as Device;
const quick = process.env.GPU_BENCH_QUICK === '1';
// The attention kernels the addon runs (read once per process): scripts/gpu-check.sh runs this file
// a second time with AGENTRL_GPU_ATTENTION=mma and GPU_BENCH_ONLY=train, one train figure for each.
const attention = process.env.AGENTRL_GPU_ATTENTION || 'simt';
const trainOnly = process.env.GPU_BENCH_ONLY === 'train';
const peakTflops = Number(process.env.GPU_PEAK_TFLOPS ?? 989); // H100/H200 SXM dense bf16, datasheet
const report = (figure: Record<string, unknown>) => console.log(`GPU_BENCH ${JSON.stringify(figure)}`);
const now = () => performance.now() / 1000;

// Qwen3-0.6B's shape (its config.json), random init.
const qwen3_06b: ModelConfigInput = {
  architectures: ['Qwen3ForCausalLM'],
  vocab_size: 151936,
  hidden_size: 1024,
  intermediate_size: 3072,
  num_hidden_layers: quick ? 2 : 28,
  num_attention_heads: 16,
  num_key_value_heads: 8,
  head_dim: 128,
  max_position_embeddings: 40960,
  rope_theta: 1000000,
  tie_word_embeddings: true,
  initializer_range: 0.02,
};

it('gpu bench', () => {
  const why = deviceUnavailableReason(device);
  if (why !== undefined) {
    report({ figure: 'skipped', reason: why });
    return;
  }
  const seq = quick ? 512 : 4096;
  const model = createModel(qwen3_06b, { device, precision: 'bf16', seed: 1 });
  report({ figure: 'gemm', path: deviceGemmPath(model) });
  const opt = createAdamW(model, { lr: 1e-4, maxGradNorm: 1, warmupSteps: 0 });
  const tokens = Array.from({ length: seq }, (_, i) => (i * 7919) % 151936);
  const batch = packSequences([tokens]);
  const mask = new Uint8Array(seq).fill(1);
  const step = () => {
    model.zeroGrad();
    model.sftLoss(batch, mask);
    opt.step();
  };
  step(); // warm-up: allocations, rope tables, cuBLASLt heuristics
  const steps = quick ? 2 : 5;
  const t0 = now();
  for (let s = 0; s < steps; s++) step();
  const dt = (now() - t0) / steps;
  // 6 N per token for the matrices (lm_head included) + causal attention's 6 L T d_attn per token.
  const c = model.shape;
  const perLayer =
    c.hidden * c.heads * c.headDim * 2 + c.hidden * c.kvHeads * c.headDim * 2 + 3 * c.hidden * c.intermediate;
  const matmulParams = c.layers * perLayer + c.vocab * c.hidden;
  const flopsPerToken = 6 * matmulParams + 6 * c.layers * seq * c.heads * c.headDim;
  const tps = seq / dt;
  report({
    figure: 'train',
    attention,
    layers: c.layers,
    seq,
    tokensPerSecond: tps,
    stepSeconds: dt,
    mfu: (tps * flopsPerToken) / (peakTflops * 1e12),
  });
  if (trainOnly) return;

  for (const b of [1, 64]) {
    const caches = Array.from({ length: b }, () => model.native.createCache(model.handle));
    const prompt = 16;
    const V = c.vocab;
    const logits = undefined as unknown as Float32Array; // logits stay on the device
    const first = Int32Array.from({ length: b * prompt }, (_, i) => (i * 31) % V);
    model.native.extend(model.handle, caches, first, new Int32Array(b).fill(prompt), logits);
    const rows = (k: number) =>
      Array.from({ length: b }, (_, i) => ({
        temperature: 0.7,
        topK: 0,
        topP: 0.95,
        uniform: ((i * 13 + k) % 97) / 97,
      }));
    let next = sampleOnDevice(model, rows(0)).tokens;
    const newTokens = quick ? 8 : 64;
    const ones = new Int32Array(b).fill(1);
    const t1 = now();
    for (let k = 0; k < newTokens; k++) {
      model.native.extend(model.handle, caches, next, ones, logits);
      next = sampleOnDevice(model, rows(k + 1)).tokens;
    }
    report({ figure: 'decode', batch: b, tokensPerSecond: (b * newTokens) / (now() - t1) });
  }

  const T = quick ? 2048 : 16384;
  const V = 151936;
  const H = 1024;
  const hidden = Float32Array.from({ length: T * H }, (_, i) => Math.sin(i) * 0.5);
  const weight = Float32Array.from({ length: V * H }, (_, i) => Math.cos(i * 1.3) * 0.02);
  const inputs = {
    hidden,
    weight,
    hiddenSize: H,
    vocabSize: V,
    targets: Int32Array.from({ length: T }, (_, i) => (i * 7) % V),
    oldLogprobs: new Float32Array(T).fill(-11),
    advantages: Float32Array.from({ length: T }, (_, i) => (i % 2 ? 1 : -1)),
    lossMask: new Uint8Array(T).fill(1),
    cuSeqlens: Int32Array.from([0, T / 2, T]),
  };
  // The kernels component directly (@agentrl/kernels' fusedLinearPolicyLoss calls the same entry):
  // hidden and weight are uploaded once, then `repeat` runs on device buffers give the median device
  // time (what a training step pays: the engine's policy loss reads the device model's buffers),
  // beside the whole host-array call with its copies. fp32 products, as the PyTorch baseline's
  // materialised fp32 logits; then bf16 tensor-core products (the engine's --precision bf16).
  const kernels = loadNative().kernels as {
    fusedLinear(args: Record<string, unknown>): {
      workspaceBytes: number;
      passes: number;
      deviceSeconds: number;
    };
  };
  const call = (precision: 'fp32' | 'bf16', repeat: number) =>
    kernels.fusedLinear({
      ...inputs,
      dHidden: new Float32Array(T * H),
      dWeight: new Float32Array(V * H),
      logp: new Float32Array(T),
      accumulate: false,
      config: GRPO_ROC_NATIVE_LOSS,
      backend: device === 'cuda' ? 'cuda' : 'hip',
      precision,
      repeat,
    });
  for (const precision of ['fp32', 'bf16'] as const) {
    const t2 = now();
    const r = call(precision, 3);
    report({
      figure: 'fused-linear',
      precision,
      T,
      V,
      H,
      seconds: r.deviceSeconds,
      passes: r.passes,
      wallSecondsWithCopies: now() - t2,
      note: 'seconds: median of 3 runs on device buffers; the wall time adds 3 runs, allocation and PCIe copies',
      workspaceBytes: r.workspaceBytes,
      materialisedLogitsBytes: T * V * 4,
    });
  }
});
