/**
 * `pnpm --filter @agentrl/engine-server bench`: `agentrl serve` started as its own process on a
 * random Qwen3-shaped checkpoint, and one client measuring, side by side in one run, the same
 * completion (same seed, `ignore_eos`, N tokens) asked for whole and streamed: time to the first
 * streamed token, stream tokens/s, and the non-streamed call's time and tokens/s. Each streamed
 * text is checked equal to the non-streamed one. Writes <repo root>/bench-results/engine-server.json.
 */
import { execSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCharTokenizer, createModel, saveModel } from '@agentrl/engine';
import OpenAI from 'openai';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../../..');
const TOKENS = Number(process.env.AGENTRL_BENCH_TOKENS ?? 256);
const ROUNDS = Number(process.env.AGENTRL_BENCH_RUNS ?? 7);
const CONFIG = {
  architectures: ['Qwen3ForCausalLM'],
  vocab_size: createCharTokenizer().vocabSize,
  hidden_size: 512,
  intermediate_size: 1536,
  num_hidden_layers: 8,
  num_attention_heads: 8,
  num_key_value_heads: 4,
  head_dim: 64,
  max_position_embeddings: 1024,
  tie_word_embeddings: true,
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

async function startServer(dir: string) {
  const proc = spawn(
    process.execPath,
    ['--conditions=@agentrl/source', '--import', 'tsx', join(here, '../src/bin.ts'), '--checkpoint', dir],
    { cwd: join(here, '..'), stdio: ['ignore', 'pipe', 'inherit'] },
  );
  proc.stdout.setEncoding('utf8');
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    proc.stdout.on('data', (d: string) => {
      out += d;
      const m = /on (http:\/\/\S+)/.exec(out);
      if (m) ok(m[1]!);
    });
    proc.once('exit', (code) => fail(new Error(`agentrl serve exited (${code}) before listening`)));
  });
  return { url, stop: () => proc.kill('SIGTERM') };
}

async function main() {
  const dir = await mkdtemp(join(tmpdir(), 'agentrl-serve-bench-'));
  await saveModel(createModel(CONFIG, { seed: 1 }), dir);
  const server = await startServer(join(dir, ''));
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const request = (seed: number) => ({
    model: dir,
    prompt: 'Once upon a time',
    max_tokens: TOKENS,
    temperature: 1,
    seed,
    ignore_eos: true,
  });
  const whole: number[] = [];
  const ttft: number[] = [];
  const streamTotal: number[] = [];
  let equal = 0;
  await client.completions.create({ ...request(0), max_tokens: 8 }); // warm-up: packing, JIT
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    const c = await client.completions.create(request(r + 1));
    whole.push(performance.now() - t0);
    const t1 = performance.now();
    const stream = await client.completions.create({ ...request(r + 1), stream: true });
    let first = 0;
    let text = '';
    for await (const chunk of stream) {
      const piece = chunk.choices[0]?.text ?? '';
      if (piece && first === 0) first = performance.now() - t1;
      text += piece;
    }
    streamTotal.push(performance.now() - t1);
    ttft.push(first);
    if (text === c.choices[0]!.text) equal++;
    console.log(
      `round ${r + 1}: whole ${round(whole.at(-1)!)} ms; stream first token ${round(first)} ms, all ${round(streamTotal.at(-1)!)} ms`,
    );
  }
  server.stop();
  await rm(dir, { recursive: true, force: true });
  const results = {
    nonStreamed: { medianMs: round(median(whole)), tokensPerSec: round((TOKENS * 1000) / median(whole)) },
    streamed: {
      timeToFirstTokenMs: round(median(ttft)),
      medianMs: round(median(streamTotal)),
      tokensPerSec: round((TOKENS * 1000) / median(streamTotal)),
    },
    /** the whole call's time to its (only) answer, over the stream's time to its first token */
    firstTokenSpeedup: round(median(whole) / median(ttft)),
    streamedEqualsWhole: `${equal}/${ROUNDS}`,
  };
  const out = {
    package: '@agentrl/engine-server',
    command: 'pnpm --filter @agentrl/engine-server bench',
    commit: execSync('git rev-parse --short HEAD', { cwd: root, encoding: 'utf8' }).trim(),
    date: new Date().toISOString(),
    machine: {
      cores: cpus().length,
      cpu: cpus()[0]?.model,
      memGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
    },
    loadAverage: loadavg().map((x) => round(x)),
    model: { ...CONFIG, tokenizer: 'char' },
    tokens: TOKENS,
    rounds: ROUNDS,
    results,
  };
  console.log(JSON.stringify(results, null, 2));
  mkdirSync(resolve(root, 'bench-results'), { recursive: true });
  writeFileSync(resolve(root, 'bench-results/engine-server.json'), `${JSON.stringify(out, null, 2)}\n`);
}

await main();
