/**
 * `pnpm --filter @agentrl/test bench`: one RL step of `agentrl train` with the 151K Qwen3
 * vocabulary (a random-init Qwen3-shaped model, 2 layers x 64, with the real Qwen3 tokenizer),
 * split into generate / tool / train wall time (the step's own metrics), on this checkout and,
 * side by side in the same run, on a baseline checkout given by AGENTRL_BENCH_BASELINE (e.g. main,
 * installed and built). Each side runs the same CLI command as a separate process. Writes
 * <repo>/bench-results/trainer-rl-step.json.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO } from '../src/cli.js';
import { writeQwen3Checkpoint } from '../src/qwen3-fixture.js';

const work = mkdtempSync(join(tmpdir(), 'agentrl-bench-rl-'));
const ckpt = await writeQwen3Checkpoint(join(work, 'init'));
const sides: Array<[string, string]> = [['this checkout', REPO]];
if (process.env.AGENTRL_BENCH_BASELINE) sides.push(['baseline', resolve(process.env.AGENTRL_BENCH_BASELINE)]);

const args = (runs: string) => [
  'train',
  '--runsDir',
  runs,
  '--name',
  'step',
  '--no-progress',
  '--model.init',
  ckpt,
  '--sft.enabled',
  'false',
  '--stop-after',
  '1',
  '--rl.promptsPerStep',
  '4',
  '--rl.n',
  '4',
  '--rl.oversample',
  '8',
  '--rl.rejectEqualReward',
  'false',
  '--eval.problems',
  '1',
  '--eval.k',
  '1',
  '--eval.maxResponseTokens',
  '8',
];

const results: Record<string, unknown>[] = [];
for (const [label, repo] of sides) {
  const runs = join(work, label.replace(/\W+/g, '-'));
  const r = spawnSync(
    process.execPath,
    ['--conditions=@agentrl/source', '--import', 'tsx', join(repo, 'apps/trainer/src/bin.ts'), ...args(runs)],
    { cwd: join(repo, 'test'), encoding: 'utf8', env: { ...process.env, FORCE_COLOR: '0' } },
  );
  const metrics = join(runs, 'step', 'metrics.jsonl');
  const step = existsSync(metrics)
    ? readFileSync(metrics, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"phase":"rl"'))
        .map((l) => JSON.parse(l) as Record<string, number>)[0]
    : undefined;
  if (r.status !== 0 || !step) {
    const why = (r.stderr.split('\n').find((l) => l.startsWith('agentrl:')) ?? `exit ${r.status}`).trim();
    results.push({ side: label, repo, ok: false, error: why });
    console.log(`${label.padEnd(14)} the step did not run: ${why}`);
    continue;
  }
  const row = {
    side: label,
    repo,
    ok: true,
    generateSeconds: step.timeGenerate,
    toolSeconds: step.timeTool,
    trainSeconds: step.timeTrain,
    generatedTokensPerSec: step.tokensPerSec,
    responseLength: step.responseLength,
    trainTokens: step.trainTokens,
  };
  results.push(row);
  console.log(
    `${label.padEnd(14)} generate ${step.timeGenerate!.toFixed(1)} s (${step.tokensPerSec!.toFixed(0)} tok/s)  tool ${step.timeTool!.toFixed(2)} s  train ${step.timeTrain!.toFixed(2)} s (${step.trainTokens} tokens)`,
  );
}
mkdirSync(join(REPO, 'bench-results'), { recursive: true });
writeFileSync(join(REPO, 'bench-results', 'trainer-rl-step.json'), `${JSON.stringify(results, null, 2)}\n`);
rmSync(work, { recursive: true, force: true });
