import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { type Device, firstRunnableDevice } from '../src/device.js';
import { rel } from './helpers.js';

// The tensor-core attention (native/src/engine/cuda/attention_mma.cu, AGENTRL_GPU_ATTENTION=mma)
// against the fp32 SIMT kernels (the default) on the same device: forward hidden states, sftLoss,
// every gradient and 5 AdamW steps, at head_dim 64 (GQA 4:1) and 128 (GQA 2:1) over a packed batch
// whose lengths cross the kernels' tiles. The addon reads the variable once per process, so each
// setting runs in its own child (fixtures/attention-mma-child.ts). On CUDA the products are bf16
// (fp32 accumulation, fp32 softmax): agreement to MMA_TOL relative (max |a - b| / max |b| per
// tensor, as the bf16 GEMM tests), and the bits must differ (else the mma kernels did not run);
// AGENTRL_GPU_ATTENTION=mma-lds (the same kernels reading fragments with plain shared loads instead
// of ldmatrix) must give mma's numbers (to 1e-6).
// On HIP (the HIP-CPU check: AGENTRL_GPU_TEST_DEVICE=rocm) there is no mma, so the two settings
// must give the same bits. No GPU: every test listed as skipped with the reason.
const MMA_TOL = 3e-2;
const wanted = process.env.AGENTRL_GPU_TEST_DEVICE as Device | undefined;
const { device, reasons } = firstRunnableDevice(wanted ? [wanted] : ['cuda']);
const where = device ? `on ${device}` : `skipped, no GPU: ${reasons}`;
const child = fileURLToPath(new URL('./fixtures/attention-mma-child.ts', import.meta.url));
const sanitizer =
  process.env.AGENTRL_GPU_SANITIZE === '1'
    ? [...(process.env.PATH ?? '').split(':'), '/usr/local/cuda/bin']
        .map((d) => join(d, 'compute-sanitizer'))
        .find((p) => existsSync(p))
    : undefined;

interface Run {
  hidden: number[];
  loss: number;
  grads: { name: string; grad: number[] }[];
  repeatable: boolean;
  losses: number[];
}

/** The child at one head_dim and setting, optionally under a wrapper command (compute-sanitizer). */
function spawnChild(headDim: number, attention: string, wrapper: string[] = [], extra: string[] = []) {
  const node = [process.execPath, '--conditions=@agentrl/source', '--import', 'tsx', child];
  const [cmd, ...args] = [...wrapper, ...node, String(headDim), device ?? 'cuda', ...extra];
  return spawnSync(cmd as string, args, {
    encoding: 'utf8',
    timeout: 600_000,
    maxBuffer: 256 * 1024 * 1024,
    env: { ...process.env, AGENTRL_GPU_ATTENTION: attention },
  });
}

function run(headDim: number, attention: 'mma' | 'mma-lds' | 'simt'): Run {
  const r = spawnChild(headDim, attention);
  const line = r.stdout?.split('\n').find((l) => l.startsWith('ATTN_MMA '));
  if (r.status !== 0 || !line) {
    throw new Error(
      `head_dim ${headDim}, ${attention}: exit ${r.status ?? r.error}\n${r.stdout}\n${r.stderr}`,
    );
  }
  return JSON.parse(line.slice('ATTN_MMA '.length)) as Run;
}

describe(`tensor-core attention (AGENTRL_GPU_ATTENTION=mma) against SIMT (${where})`, () => {
  it.skipIf(!device).each([64, 128])(
    `head_dim %i: forward, sftLoss, every gradient and 5 AdamW losses agree (CUDA: within ${MMA_TOL}, not bit for bit; HIP: the same bits)`,
    (headDim) => {
      const simt = run(headDim, 'simt');
      const mma = run(headDim, 'mma');
      // The same kernels reading their fragments with plain loads instead of ldmatrix: the same
      // numbers (same bits in the emulation; 1e-6 leaves room for the compiler's FMA choices, a
      // wrong ldmatrix layout is off by O(1)).
      const lds = run(headDim, 'mma-lds');
      expect(rel(lds.hidden, mma.hidden), 'mma-lds vs mma: hidden').toBeLessThan(1e-6);
      lds.grads.forEach((g, i) => {
        expect(rel(g.grad, mma.grads[i]?.grad ?? []), `mma-lds vs mma: ${g.name}`).toBeLessThan(1e-6);
      });
      expect(simt.repeatable, 'simt: the same gradients twice').toBe(true);
      expect(mma.repeatable, 'mma: the same gradients twice (no atomics)').toBe(true);
      if (device === 'cuda') {
        expect(rel(mma.hidden, simt.hidden), 'hidden').toBeLessThan(MMA_TOL);
        expect(rel(mma.hidden, simt.hidden), 'hidden: the mma kernels ran').toBeGreaterThan(0);
        expect(Math.abs(mma.loss - simt.loss)).toBeLessThan(MMA_TOL * simt.loss);
        mma.grads.forEach((g, i) => {
          const ref = simt.grads[i];
          expect(g.name).toBe(ref?.name);
          expect(rel(g.grad, ref?.grad ?? []), g.name).toBeLessThan(MMA_TOL);
        });
        mma.losses.forEach((l, i) => {
          expect(Math.abs(l - (simt.losses[i] ?? 0)), `AdamW step ${i}`).toBeLessThan(
            MMA_TOL * (simt.losses[i] ?? 1),
          );
        });
      } else {
        expect(mma.hidden).toEqual(simt.hidden);
        expect(mma.grads).toEqual(simt.grads);
        expect(mma.losses).toEqual(simt.losses);
      }
      for (const r of [simt, mma]) expect(r.losses.at(-1) ?? 0).toBeLessThan(r.losses[0] ?? 0);
    },
  );

  // Opt-in (AGENTRL_GPU_SANITIZE=1: slow): compute-sanitizer's memcheck (out-of-bounds, misaligned)
  // and racecheck (shared-memory hazards) over the Mma kernels only, one forward and backward.
  it.skipIf(device !== 'cuda' || !sanitizer)(
    `compute-sanitizer memcheck and racecheck find nothing in the mma kernels (${sanitizer ?? 'skipped: set AGENTRL_GPU_SANITIZE=1 with compute-sanitizer on PATH'})`,
    { timeout: 1_200_000 },
    () => {
      for (const tool of ['memcheck', 'racecheck']) {
        const wrap = [
          sanitizer as string,
          '--tool',
          tool,
          '--kernel-name',
          'kns=Mma',
          '--error-exitcode',
          '99',
        ];
        const r = spawnChild(128, 'mma', wrap, ['once']);
        expect(r.status, `${tool}:\n${r.stdout}\n${r.stderr}`).toBe(0);
        expect(r.stdout, tool).toMatch(/ATTN_MMA /);
      }
    },
  );

  it.skipIf(!device)(
    'an unknown AGENTRL_GPU_ATTENTION is an error that names the variable and the choices',
    () => {
      const r = spawnChild(64, 'wmma');
      expect(r.status).not.toBe(0);
      expect(r.stderr).toMatch(/AGENTRL_GPU_ATTENTION=wmma: expected simt .* or mma/);
    },
  );
});
