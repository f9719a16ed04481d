import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Device, deviceUnavailableReason, firstRunnableDevice, loadModel } from '@agentrl/engine';
import { main } from 'agentrl';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { readJsonl } from './cli.js';

/**
 * `agentrl train --device`: a GPU that cannot run stops the run at start with the reason and the way
 * out; on a GPU (scripts/gpu-check.sh sets AGENTRL_GPU_TEST_DEVICE=cuda) the smoke preset trains
 * there. Without one the GPU test is listed as skipped with the reason in its name.
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
    },
  );

  it.skipIf(gpu === 'rocm')('--device rocm where it cannot run stops the same way', async () => {
    const r = await cli(smoke('norocm', 'rocm'));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `--device rocm cannot run the engine here: ${deviceUnavailableReason('rocm')}. Use --device cpu`,
    );
  });

  it.skipIf(!gpu)(
    `the smoke preset trains with --device ${gpu ?? 'cuda'}: SFT loss falls, RL changes the weights`,
    async () => {
      const r = await cli(smoke('gpu', gpu ?? 'cuda'));
      expect(r.code, r.stderr).toBe(0);
      const dir = join(runs, 'gpu');
      const metrics = readJsonl(join(dir, 'metrics.jsonl'));
      const sft = metrics.filter((m) => m.phase === 'sft');
      const rl = metrics.filter((m) => m.phase === 'rl');
      expect(sft.length).toBeGreaterThan(1);
      for (const m of sft) expect(Number.isFinite(m.loss)).toBe(true);
      expect(sft.at(-1)!.loss).toBeLessThan(sft[0]!.loss as number);
      expect(rl.length).toBeGreaterThan(0);
      for (const m of rl) {
        for (const k of ['reward', 'gradNorm', 'approxKl', 'clipFracHigh', 'responseLength'])
          expect(Number.isFinite(m[k]), `${k} of RL step ${m.step}`).toBe(true);
      }
      // step-000000 is written after SFT, the last one after RL: saved from the device, fp32.
      const afterSft = await loadModel(join(dir, 'checkpoints', 'step-000000'));
      const last = await loadModel(join(dir, 'checkpoints', `step-${String(rl.length).padStart(6, '0')}`));
      expect(last.dtype).toBe('float32');
      const a = afterSft.parameters();
      const changed = last.parameters().filter((p, i) => p.data.some((v, j) => v !== a[i]!.data[j]));
      expect(changed.length).toBeGreaterThan(0);
    },
  );
});
