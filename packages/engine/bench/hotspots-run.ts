// Before/after timings of single hot spots (not part of `pnpm bench`): run with
//   node --conditions=@agentrl/source --import tsx bench/hotspots-run.ts attention|ce|decode
import { loadavg } from 'node:os';
import { packSequences } from '../src/batch.js';
import { createModel } from '../src/model.js';
import { setEngineThreads } from '../src/native.js';
import { decodeRun } from './decode-run.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const base = {
  architectures: ['Qwen3ForCausalLM'],
  hidden_size: 1024,
  intermediate_size: 3072,
  num_attention_heads: 16,
  num_key_value_heads: 8,
  head_dim: 128,
  tie_word_embeddings: true,
  max_position_embeddings: 4096,
};
// THREADS=1 with the CPU-time figures reads a hot spot's cost even on a loaded machine.
setEngineThreads(Number(process.env.THREADS ?? 2));
const what = process.argv[2];
const rounds = Number(process.env.ROUNDS ?? 5);
const load0 = loadavg()[0];
if (what === 'ce') {
  // One layer, hidden 256 and the full vocabulary: the cross-entropy's scratch (155 MB of logits)
  // weighs in a 512-token call.
  const model = createModel(
    { ...base, vocab_size: 151_936, num_hidden_layers: 1, hidden_size: 256, intermediate_size: 512 },
    { seed: 1 },
  );
  const seqs = [0, 1].map((s) => Array.from({ length: 256 }, (_, t) => (t * 7919 + s * 104729) % 150000));
  const batch = packSequences(seqs);
  const mask = new Uint8Array(512).fill(1);
  const times: number[] = [];
  const cpu: number[] = [];
  for (let r = 0; r < rounds + 1; r++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    model.sftLoss(batch, mask);
    model.zeroGrad();
    const c = process.cpuUsage(c0);
    if (r > 0) {
      times.push(performance.now() - t0);
      cpu.push((c.user + c.system) / 1000);
    }
  }
  console.log(
    JSON.stringify({
      what,
      cpu_ms_median: median(cpu),
      ms_median: median(times),
      cpu,
      load: [load0, loadavg()[0]],
    }),
  );
} else {
  // attention: 2 layers, 8 sequences decoding after 512-token prompts (attention-heavy);
  // decode: the same at 2 layers and 32-token prompts (the products' share is large).
  const prompt = Number(process.env.PROMPT ?? (what === 'attention' ? 512 : 32));
  const model = createModel(
    { ...base, vocab_size: 4096, num_hidden_layers: 2 },
    { seed: 3, training: false },
  );
  const batch = Number(process.env.BATCH ?? 8);
  const tps: number[] = [];
  const cpu: number[] = [];
  await decodeRun(model, batch, 2, true, prompt);
  for (let r = 0; r < rounds; r++) {
    const run = await decodeRun(model, batch, 16, true, prompt);
    tps.push(run.decodeTokensPerS);
    cpu.push(run.decodeCpuMsPerStep);
  }
  console.log(
    JSON.stringify({
      what,
      batch,
      prompt,
      cpu_ms_per_step_median: median(cpu),
      tokens_per_s_median: median(tps),
      cpu,
      load: [load0, loadavg()[0]],
    }),
  );
}
