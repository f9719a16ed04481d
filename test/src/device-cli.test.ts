import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createModel,
  type Device,
  deviceUnavailableReason,
  firstRunnableDevice,
  loadModel,
} from '@agentrl/engine';
import { hashSeed, main } from 'agentrl';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { readJsonl } from './cli.js';

/**
 * `agentrl train --device`: a GPU that cannot run stops the run at start with the reason and the way
 * out; on a GPU (scripts/gpu-check.sh sets AGENTRL_GPU_TEST_DEVICE=cuda) the smoke preset trains
 * there, beside the same run on the CPU. Without one the GPU test is listed as skipped with the reason in its name.
 */
const runs = mkdtempSync(join(tmpdir(), 'agentrl-device-'));
afterAll(() => rmSync(runs, { recursive: true, force: true }));

const wanted = process.env.AGENTRL_GPU_TEST_DEVICE as Device | undefined;
const { device: gpu, reasons } = firstRunnableDevice(wanted ? [wanted] : ['cuda', 'rocm']);
const where = gpu ? `on ${gpu}` : `skipped, no GPU: ${reasons}`;

/** Runs the CLI in this process and captures what it writes to stdout and stderr. */
async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  try {
    return { code: await main(args), stdout, stderr };
  } finally {
    err.mockRestore();
    out.mockRestore();
  }
}

const smoke = (name: string, device: string) => [
  'train',
  '--preset',
  'smoke',
  '--runsDir',
  runs,
  '--no-progress',
  '--name',
  name,
  '--device',
  device,
];

describe(`agentrl train --device (${where})`, () => {
  it('--help lists --device with its choices and the cpu default (from the schema)', async () => {
    const r = await cli(['train', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/--device\b[^\n]*(cpu\|cuda\|rocm|cpu, cuda, rocm)/);
  });

  it('an unknown device is a config error that lists the choices', async () => {
    const r = await cli(smoke('tpu', 'tpu'));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/device/);
    expect(r.stderr).toMatch(/cpu.*cuda.*rocm/);
  });

  it.skipIf(gpu === 'cuda')(
    '--device cuda where it cannot run stops at start: the device, the reason, --device cpu',
    async () => {
      const why = deviceUnavailableReason('cuda');
      const r = await cli(smoke('nocuda', 'cuda'));
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`--device cuda cannot run the engine here: ${why}. Use --device cpu`);
      expect(r.stderr).not.toMatch(/unexpected error/);
      // stopped before the run directory was made
      expect(existsSync(join(runs, 'nocuda'))).toBe(false);
      // and before the data is read: a missing dataset file is not what it reports
      const data = ['--task.kind', 'files', '--task.trainFiles', '["/nonexistent/train.jsonl"]'];
      const first = await cli([...smoke('nodata', 'cuda'), ...data]);
      expect(first.stderr).toContain(`--device cuda cannot run the engine here: ${why}`);
      expect(first.stderr).not.toMatch(/dataset/);
    },
  );

  it('--precision: fp32 by default, bf16 refused on the cpu device with the way out', async () => {
    const help = await cli(['train', '--help']);
    expect(help.stdout).toMatch(/--precision\b[^\n]*(fp32\|bf16|fp32, bf16)/);
    const r = await cli([...smoke('bf16cpu', 'cpu'), '--precision', 'bf16']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/precision/);
    expect(r.stderr).toContain(
      'bf16 runs on a GPU device only (the CPU engine computes in fp32): add --device cuda or --device rocm',
    );
    expect(existsSync(join(runs, 'bf16cpu'))).toBe(false);
  });

  it.skipIf(!gpu)(
    `--precision bf16 --device ${gpu ?? 'cuda'}: the smoke preset's SFT tracks the fp32 CPU run within 2%`,
    async () => {
      const dev = await cli([...smoke('gpubf16', gpu ?? 'cuda'), '--precision', 'bf16']);
      expect(dev.code, dev.stderr).toBe(0);
      // The fp32 CPU run of the test above, or a fresh one when this test runs alone.
      if (!existsSync(join(runs, 'cpu', 'metrics.jsonl'))) {
        const host = await cli(smoke('cpu', 'cpu'));
        expect(host.code, host.stderr).toBe(0);
      }
      const sft = (name: string) =>
        readJsonl(join(runs, name, 'metrics.jsonl')).filter((m) => m.phase === 'sft');
      const ref = sft('cpu');
      const got = sft('gpubf16');
      expect(got.length).toBe(ref.length);
      got.forEach((m, i) => {
        const want = ref[i]!.loss as number;
        expect(Math.abs((m.loss as number) - want), `SFT step ${m.step}`).toBeLessThan(2e-2 * want);
      });
      expect(got.at(-1)!.loss).toBeLessThan(got[0]!.loss as number);
    },
    480_000, // up to two smoke runs: seconds on a GPU, minutes through HIP-CPU
  );

  it.skipIf(gpu === 'rocm')('--device rocm where it cannot run stops the same way', async () => {
    const r = await cli(smoke('norocm', 'rocm'));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `--device rocm cannot run the engine here: ${deviceUnavailableReason('rocm')}. Use --device cpu`,
    );
  });

  it.skipIf(!gpu)(
    `the smoke preset trains with --device ${gpu ?? 'cuda'}: SFT loss falls as on the CPU, the weights move as on the CPU`,
    async () => {
      const dev = await cli(smoke('gpu', gpu ?? 'cuda'));
      expect(dev.code, dev.stderr).toBe(0);
      const host = await cli(smoke('cpu', 'cpu'));
      expect(host.code, host.stderr).toBe(0);
      const metrics = (name: string) => readJsonl(join(runs, name, 'metrics.jsonl'));
      const sft = metrics('gpu').filter((m) => m.phase === 'sft');
      const sftCpu = metrics('cpu').filter((m) => m.phase === 'sft');
      expect(sft.length).toBeGreaterThan(1);
      expect(sft.length).toBe(sftCpu.length);
      sft.forEach((m, i) => {
        const ref = sftCpu[i]!.loss as number;
        expect(Math.abs((m.loss as number) - ref), `SFT step ${m.step}`).toBeLessThan(1e-4 * ref);
      });
      expect(sft.at(-1)!.loss).toBeLessThan(sft[0]!.loss as number);
      // RL on the device: rollouts from the device model, then the step (the smoke preset's tiny
      // model rarely earns a reward, so its RL steps may have no advantage to learn from; the
      // numbers of a device RL step are checked in apps/trainer's native-policy.test.ts).
      const rl = metrics('gpu').filter((m) => m.phase === 'rl');
      expect(rl.length).toBeGreaterThan(0);
      for (const m of rl) {
        for (const k of ['reward', 'gradNorm', 'approxKl', 'clipFracHigh', 'responseLength'])
          expect(Number.isFinite(m[k]), `${k} of RL step ${m.step}`).toBe(true);
      }
      // The final checkpoint, saved from the device in fp32: every tensor moved away from the seeded
      // init (what NativeTrainer creates), and by what the CPU run moved it (within 5% of the update).
      const last = `step-${String(rl.length).padStart(6, '0')}`;
      const seed = JSON.parse(readFileSync(join(runs, 'gpu', 'config.json'), 'utf8')).seed as number;
      const trained = await loadModel(join(runs, 'gpu', 'checkpoints', last));
      expect(trained.dtype).toBe('float32');
      const init = createModel(trained.config, { seed: hashSeed(seed, 'init') }).parameters();
      const cpu = (await loadModel(join(runs, 'cpu', 'checkpoints', last))).parameters();
      trained.parameters().forEach((p, i) => {
        const a = init[i]!.data;
        const c = cpu[i]!.data;
        const moved = c.reduce((m, v, j) => Math.max(m, Math.abs(v - a[j]!)), 0);
        const gap = p.data.reduce((m, v, j) => Math.max(m, Math.abs(v - c[j]!)), 0);
        expect(moved, p.name).toBeGreaterThan(0);
        expect(
          p.data.some((v, j) => v !== a[j]),
          p.name,
        ).toBe(true);
        expect(gap, p.name).toBeLessThan(0.05 * moved);
      });
    },
  );
});
