import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadHfTokenizer, loadModel, packSequences } from '@agentrl/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJsonl, runCli, startCli, startServer, waitFor } from './cli.js';
import { writeQwen3Checkpoint } from './qwen3-fixture.js';

/**
 * The trainer on a real-model setup, end to end on CPU: a random-init Qwen3-shaped model (2 layers,
 * hidden 64) with the real Qwen3 tokenizer (151,669 tokens) and its chat template; SFT on a small
 * messages file, RL on a small math jsonl, rollouts through `agentrl serve` running as a separate
 * process with a weight sync after every update; kill -9 and --resume; eval. Then every bad input
 * of the setup stops with a message that says what to fix.
 */
const root = mkdtempSync(join(tmpdir(), 'agentrl-qwen3-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const init = join(root, 'init');
const messages = join(root, 'sft.jsonl');
const math = join(root, 'math.jsonl');
const servers: ReturnType<typeof startCli>[] = [];
afterAll(() => {
  for (const s of servers) s.kill('SIGKILL');
});

/** Starts `agentrl serve` on a free port as a separate process; killed when the file is done. */
async function serve(checkpoint: string, name = 'qwen3-tiny') {
  const server = await startServer(['--checkpoint', checkpoint, '--port', '0', '--served-model-name', name]);
  servers.push(server.child);
  return server;
}

const call = (code: string) => ({
  type: 'function',
  function: { name: 'python', arguments: JSON.stringify({ code }) },
});

beforeAll(async () => {
  await writeQwen3Checkpoint(init);
  const sft = [
    [2, 3],
    [4, 5],
    [6, 7],
  ].map(([a, b]) => ({
    messages: [
      { role: 'user', content: `What is ${a} + ${b}?` },
      { role: 'assistant', content: '', tool_calls: [call(`print(${a} + ${b})`)] },
      { role: 'tool', content: String(a! + b!) },
      { role: 'assistant', content: `\\boxed{${a! + b!}}` },
    ],
  }));
  writeFileSync(messages, sft.map((r) => JSON.stringify(r)).join('\n'));
  const rows = [
    ...[1, 2, 3, 4, 5, 6].map((i) => ({
      data_source: 'toy',
      prompt: [{ role: 'user', content: `What is ${i} + ${i + 10}?` }],
      ability: 'math',
      reward_model: { style: 'rule', ground_truth: String(2 * i + 10) },
    })),
    { data_source: 'toy', prompt: [{ role: 'user', content: 'A row without an answer' }] },
  ];
  writeFileSync(math, rows.map((r) => JSON.stringify(r)).join('\n'));
}, 120_000);

const trainArgs = (runs: string, name: string, url: string, extra: string[] = []) => [
  'train',
  '--runsDir',
  runs,
  '--name',
  name,
  '--no-progress',
  '--model.init',
  init,
  '--model.chatTemplateKwargs',
  '{"enable_thinking":false}',
  '--engine',
  url,
  '--engine.kind',
  'sglang',
  '--engine.model',
  'qwen3-tiny',
  '--task.kind',
  'files',
  '--task.trainFiles',
  math,
  '--task.heldOutSize',
  '1',
  '--task.reward',
  'rstar',
  '--sft.files',
  messages,
  '--sft.steps',
  '3',
  '--sft.batchSize',
  '2',
  '--rl.stages',
  '[{"name":"s1","steps":3,"maxResponseTokens":24}]',
  '--rl.promptsPerStep',
  '2',
  '--rl.n',
  '2',
  '--rl.oversample',
  '2',
  '--rl.maxTurns',
  '2',
  '--rl.maxTurnTokens',
  '12',
  '--rl.rejectEqualReward',
  'false',
  '--eval.problems',
  '1',
  '--eval.k',
  '1',
  '--eval.maxResponseTokens',
  '12',
  '--eval.everySteps',
  '0',
  '--checkpointEvery',
  '1',
  ...extra,
];

describe('a Qwen3-shaped model with the real tokenizer, rollouts on agentrl serve', () => {
  it("SFT, RL with weight sync, kill -9 and resume, then eval; the server ends with the trainer's weights", async () => {
    const { url } = await serve(init);
    const runs = join(root, 'runs');
    const dir = join(runs, 'q');
    const child = startCli(trainArgs(runs, 'q', url));
    await waitFor(
      () => readJsonl(join(dir, 'metrics.jsonl')).some((m) => m.phase === 'rl' && (m.step as number) >= 2),
      240_000,
      'RL step 2',
    );
    child.kill('SIGKILL');
    const killed = await child.result;
    expect(killed.signal).toBe('SIGKILL');
    expect(killed.stderr).toMatch(/skipped 1 training rows \(1: no answer/);
    expect(killed.stderr).toMatch(
      /engine sglang@http:\/\/127\.0\.0\.1:\d+: model "qwen3-tiny", tokenizer agrees \(\/tokenize\)/,
    );
    const resumed = await runCli(['train', '--resume', dir, '--no-progress']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/resuming .* at RL step [12]/);

    const metrics = readJsonl(join(dir, 'metrics.jsonl'));
    const sft = metrics.filter((m) => m.phase === 'sft');
    const rl = metrics.filter((m) => m.phase === 'rl');
    expect(sft.map((m) => m.step)).toEqual([1, 2, 3]);
    expect(sft.at(-1)!.loss).toBeLessThan(sft[0]!.loss as number);
    expect(rl.map((m) => m.step)).toEqual([1, 2, 3]);
    // Every step sampled from the weights of the update before it, and nothing failed in the engine.
    expect(rl.map((m) => m.policyVersion)).toEqual([0, 1, 2]);
    for (const m of rl) {
      expect(m.engineFailedTrajectories).toBe(0);
      expect(m.stalePolicyTrajectories).toBe(0);
      expect(m.trainTokens as number).toBeGreaterThan(0);
    }

    // After the last sync the server's logprobs of a fixed sequence are the trainer's own.
    const ckpt = join(dir, 'checkpoints', 'step-000003');
    const tok = await loadHfTokenizer(ckpt);
    const ids = tok.encode('<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n\\boxed{5}');
    const logprobsOf = async (dir: string) => {
      const model = await loadModel(dir);
      const vocab = model.config.vocab_size;
      const logits = model.forwardLogits(packSequences([ids]));
      return ids.slice(1).map((next, i) => {
        const row = logits.subarray(i * vocab, (i + 1) * vocab);
        let max = Number.NEGATIVE_INFINITY;
        for (const x of row) max = Math.max(max, x);
        let sum = 0;
        for (const x of row) sum += Math.exp(x - max);
        return row[next]! - max - Math.log(sum);
      });
    };
    const mine = await logprobsOf(ckpt);
    // Training moved the weights: a server that never received them would fail the check below.
    const before = await logprobsOf(init);
    expect(Math.max(...mine.map((x, i) => Math.abs(x - before[i]!)))).toBeGreaterThan(1e-3);
    // vLLM's prompt_logprobs: entry i (i >= 1) holds the logprob of token i given tokens before it.
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'qwen3-tiny',
        prompt: ids,
        max_tokens: 1,
        temperature: 0,
        prompt_logprobs: 0,
      }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const body = (await res.json()) as {
      choices: Array<{ prompt_logprobs: Array<Record<string, { logprob: number }> | null> }>;
    };
    const served = body.choices[0]!.prompt_logprobs.slice(1).map((e, i) => e![String(ids[i + 1])]!.logprob);
    expect(served).toHaveLength(mine.length);
    for (let i = 0; i < mine.length; i++) expect(Math.abs(served[i]! - mine[i]!)).toBeLessThan(1e-5);

    const out = join(root, 'eval.json');
    const ev = await runCli(['eval', '--checkpoint', dir, '--data', math, '--k', '1', '--out', out]);
    expect(ev.code, ev.stderr).toBe(0);
    expect(ev.stderr).toMatch(/skipped 1 rows/);
  }, 600_000);

  it('stops with a message that says what to fix', async () => {
    const runs = join(root, 'bad');
    const { url } = await serve(init);
    const unreachable = await runCli(trainArgs(runs, 'a', 'http://127.0.0.1:9'));
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/engine at http:\/\/127\.0\.0\.1:9 is not reachable.*start it there/);
    const unknown = await runCli(trainArgs(runs, 'b', url, ['--engine.model', 'Qwen/Qwen3-0.6B']));
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/does not serve model "Qwen\/Qwen3-0\.6B"; it serves "qwen3-tiny"/);
    // The byte tokenizer of the tiny preset against a server with the Qwen3 tokenizer.
    const mismatch = await runCli([
      'train',
      '--preset',
      'smoke',
      '--runsDir',
      runs,
      '--name',
      'c',
      '--no-progress',
      '--engine',
      url,
      '--engine.kind',
      'sglang',
    ]);
    expect(mismatch.code).toBe(1);
    expect(mismatch.stderr).toMatch(
      /tokenizes differently from the local tokenizer.*serve the same checkpoint/,
    );
    const budget = await runCli(trainArgs(runs, 'd', url, ['--rl.microBatchTokens', '100']));
    expect(budget.code).toBe(2);
    expect(budget.stderr).toMatch(/rl\.microBatchTokens \(100\).*maxResponseTokens/);
    const noTok = join(root, 'no-tok');
    await writeQwen3Checkpoint(noTok);
    rmSync(join(noTok, 'tokenizer.json'));
    const missing = await runCli([...trainArgs(runs, 'e', url), '--model.init', noTok]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no-tok has no tokenizer\.json and its vocab_size 151669/);
  }, 300_000);

  it('a server killed mid-run stops the run with the engine named, after retries', async () => {
    const { url, child: server } = await serve(init);
    const runs = join(root, 'dead');
    const run = startCli(trainArgs(runs, 'dead', url, ['--engine.retries', '2']));
    await waitFor(
      () => readJsonl(join(runs, 'dead', 'metrics.jsonl')).some((m) => m.phase === 'rl'),
      240_000,
      'RL step 1',
    );
    server.kill('SIGKILL');
    const r = await run.result;
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /engine: .*(failed in the engine after retries|weight sync .* failed).*--resume/,
    );
  }, 300_000);
});
