// sampleToken over one 151,936-logit row (the Qwen3 vocabulary) with its vocabulary loops in
// JavaScript (jsSamplerLoops: the sampler before issue 26) and native (the addon, active CPU kernel
// path), alternating call by call in one process so both see the same load; medians of ROUNDS (>= 20)
// calls each, wall and CPU time. Then (DECODE=0 skips it) batch-8 decode of a 2-layer model of the
// Qwen3-0.6B shape with its full vocabulary, whose steps are dominated by lm_head and sampling:
// decode rounds alternate between the native loops and their JS twins, swapped into the binding
// object the generator's sampleToken calls (this script only). Run from packages/engine:
//   node --conditions=@agentrl/source --import tsx bench/sampler-run.ts
// Prints one JSON line and writes it to bench-results/engine-sampler.json at the repository root.
import { execSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuKernels } from '@agentrl/native';
import { Rng } from '@agentrl/protocol';
import { createModel } from '../src/model.js';
import { type SamplerLoops, samplerBinding, setEngineThreads } from '../src/native.js';
import { sampleTokenWith } from '../src/sampling.js';
import { jsSamplerLoops } from '../src/sampling-reference.js';
import { decodeRun } from './decode-run.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const V = 151_936;
const rounds = Math.max(20, Number(process.env.ROUNDS ?? 31));
const rng = Rng.seeded(26);
const normal = () => Math.sqrt(-2 * Math.log(1 - rng.next())) * Math.cos(2 * Math.PI * rng.next());
// Model-like logits: a wide bulk and a few strong candidates (top-p 0.95 keeps a few hundred ids).
const row = Float32Array.from({ length: V }, () => 2.5 * normal() + (rng.next() < 2e-4 ? 12 : 0));
const loops = { js: jsSamplerLoops, native: samplerBinding() };
const load0 = loadavg()[0] ?? 0;

const cases: Record<string, unknown> = {};
for (const temperature of [0.6, 1]) {
  for (const topP of [1, 0.95]) {
    const params = { temperature, topK: 0, topP };
    const wall = { js: [] as number[], native: [] as number[] };
    const cpu = { js: [] as number[], native: [] as number[] };
    const tokens = { js: [] as number[], native: [] as number[] };
    for (let r = 0; r < rounds + 1; r++) {
      const u = rng.next();
      for (const name of ['js', 'native'] as const) {
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        const { token } = sampleTokenWith(loops[name], row, params, () => u);
        const ms = performance.now() - t0;
        const c = process.cpuUsage(c0);
        if (r === 0) continue; // warm-up: JIT, scratch allocation
        wall[name].push(ms);
        cpu[name].push((c.user + c.system) / 1000);
        tokens[name].push(token);
      }
    }
    if (tokens.js.join() !== tokens.native.join())
      throw new Error(`T=${temperature} p=${topP}: tokens differ`);
    const js = median(wall.js);
    const native = median(wall.native);
    cases[`T${temperature}_p${topP}`] = {
      js_ms: js,
      native_ms: native,
      speedup: js / native,
      js_cpu_ms: median(cpu.js),
      native_cpu_ms: median(cpu.native),
    };
  }
}

/** Batch-8 decode, rounds alternating between the JS loops and the native ones (same process). */
async function decodeBeforeAfter() {
  setEngineThreads(Number(process.env.THREADS ?? 2));
  const model = createModel(
    {
      architectures: ['Qwen3ForCausalLM'],
      vocab_size: V,
      hidden_size: 1024,
      intermediate_size: 3072,
      num_hidden_layers: 2,
      num_attention_heads: 16,
      num_key_value_heads: 8,
      head_dim: 128,
      tie_word_embeddings: true,
      max_position_embeddings: 4096,
    },
    { seed: 3, training: false },
  );
  const binding = samplerBinding();
  const nativeLoops: SamplerLoops = { ...binding };
  const use = (l: SamplerLoops) => Object.assign(binding, l);
  const steps = { js: [] as number[], native: [] as number[] };
  try {
    use(jsSamplerLoops);
    await decodeRun(model, 8, 2, true); // warm-up: panel packing, JIT
    for (let r = 0; r < Number(process.env.DECODE_ROUNDS ?? 4); r++) {
      for (const name of ['js', 'native'] as const) {
        use(name === 'js' ? jsSamplerLoops : nativeLoops);
        steps[name].push((1000 * (await decodeRun(model, 8, 8, true)).decode) / 8);
      }
    }
  } finally {
    use(nativeLoops);
  }
  const js = median(steps.js);
  const native = median(steps.native);
  return {
    shape: 'Qwen3-0.6B widths, 2 layers, vocabulary 151,936, batch 8, 32-token prompts, 8 steps a round',
    js_ms_per_step: js,
    native_ms_per_step: native,
    speedup: js / native,
    rounds: steps,
  };
}
const decode = process.env.DECODE === '0' ? undefined : await decodeBeforeAfter();

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const summary = {
  what: 'sampleToken, one 151,936-logit row, JS loops vs native, median of each',
  calls_each: rounds,
  machine: `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}`,
  cpu_kernels: cpuKernels().active,
  commit: execSync('git rev-parse --short HEAD', { cwd: root, encoding: 'utf8' }).trim(),
  date: new Date().toISOString(),
  load: [load0, loadavg()[0] ?? 0],
  cases,
  decode_batch8: decode,
};
mkdirSync(resolve(root, 'bench-results'), { recursive: true });
writeFileSync(resolve(root, 'bench-results/engine-sampler.json'), `${JSON.stringify(summary, null, 2)}\n`);
console.log(JSON.stringify(summary));
