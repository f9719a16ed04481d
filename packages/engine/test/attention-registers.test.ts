import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// The device attention kernels' register budget, read from the compilers (no GPU needed): at
// head_dim 128 a thread that held whole rows spilled to local memory (255 registers and up to
// 3.2 KB of spill per thread on sm_90a), which is what would make them slow on an H200. Built with
// native/CMakeLists.txt's flags; each compiler that is not installed is skipped, with the reason.
const src = fileURLToPath(new URL('../../../native/src/engine/cuda/attention.cu', import.meta.url));
// The opt-in bf16 tensor-core kernels (AGENTRL_GPU_ATTENTION=mma), templated on head_dim.
const mmaSrc = fileURLToPath(new URL('../../../native/src/engine/cuda/attention_mma.cu', import.meta.url));
// <head_dim, ldmatrix>: the fragments read by ldmatrix (AGENTRL_GPU_ATTENTION=mma) or plain loads (mma-lds).
const mmaKernels = ['MmaForwardKernel', 'MmaDkDvKernel', 'MmaDqKernel'].flatMap((k) =>
  [64, 128].flatMap((d) => [1, 0].map((l) => `${k}ILi${d}ELb${l}E`)),
);
const include = fileURLToPath(new URL('../../../native/src', import.meta.url));
const kernels = [
  'ForwardKernel',
  'DkDvKernel',
  'DqKernel',
  'DeltaKernel',
  'CachedKernel',
  'CacheWriteKernel',
];

function find(name: string, env: string | undefined, fallback: string): string | undefined {
  if (env && existsSync(env)) return env;
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return existsSync(fallback) ? fallback : undefined;
}
const nvcc = find('nvcc', process.env.CUDACXX, '/usr/local/cuda/bin/nvcc');
const hipcc = find('hipcc', undefined, '/opt/rocm/bin/hipcc');
const out = mkdtempSync(join(tmpdir(), 'agentrl-attn-regs-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** The compiler's report (stdout + stderr) of one compile; throws with it on failure. */
function report(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env });
  const text = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  if (r.status !== 0)
    throw new Error(`${cmd} failed (${r.error ?? `exit ${r.status}`}): ${args.join(' ')}\n${text}`);
  return text;
}

/** The block of lines of `text` that follows the line naming `kernel`, up to the next kernel. */
function section(text: string, start: RegExp, kernel: string): string {
  const blocks = text.split(start);
  const found = blocks.find((b) => new RegExp(`^\\S*\\d${kernel}E`).test(b.trimStart()));
  if (!found) throw new Error(`no report for ${kernel} in:\n${text}`);
  return found;
}
const num = (block: string, re: RegExp): number => Number(re.exec(block)?.[1] ?? Number.NaN);

describe(`attention kernels' registers on sm_90a (${nvcc ? nvcc : 'skipped: no nvcc on PATH or /usr/local/cuda/bin'})`, () => {
  it.skipIf(!nvcc)('no spills, no stack, <= 128 registers and <= 48 KiB shared memory per kernel', () => {
    const text = report(nvcc as string, [
      ...['-O3', '--use_fast_math', '-gencode=arch=compute_90a,code=sm_90a', '-Xptxas', '-v'],
      ...['-I', include, '-c', src, '-o', join(out, 'attention.o')],
    ]);
    for (const k of kernels) {
      const b = section(text, /Compiling entry function '_Z/, k);
      expect(num(b, /(\d+) bytes spill stores/), `${k} spill stores`).toBe(0);
      expect(num(b, /(\d+) bytes spill loads/), `${k} spill loads`).toBe(0);
      expect(num(b, /(\d+) bytes stack frame/), `${k} stack`).toBe(0);
      expect(num(b, /Used (\d+) registers/), `${k} registers`).toBeLessThanOrEqual(128);
      const smem = /(\d+) bytes smem/.exec(b);
      expect(Number(smem?.[1] ?? 0), `${k} shared memory`).toBeLessThanOrEqual(48 * 1024);
    }
  });
});

// Up to 255 registers here (a warp's 16 x head_dim accumulators are head_dim / 2 floats per lane, two
// of them in the dK/dV pass: FlashAttention-2 runs at that budget too); no spills, and the product
// really is mma.sync (not compiled out by the __CUDA_ARCH__ guard).
describe(`tensor-core attention kernels on sm_90a and sm_80 (${nvcc ? nvcc : 'skipped: no nvcc on PATH or /usr/local/cuda/bin'})`, () => {
  for (const arch of ['90a', '80']) {
    it.skipIf(!nvcc)(
      `sm_${arch}: no spills, no stack, <= 255 registers, <= 48 KiB static shared memory`,
      () => {
        const text = report(nvcc as string, [
          ...['-O3', '--use_fast_math', `-gencode=arch=compute_${arch},code=sm_${arch}`, '-Xptxas', '-v'],
          ...['-I', include, '-c', mmaSrc, '-o', join(out, `attention_mma_${arch}.o`)],
        ]);
        for (const k of mmaKernels) {
          const b = section(text, /Compiling entry function '_Z/, k);
          expect(num(b, /(\d+) bytes spill stores/), `${k} spill stores`).toBe(0);
          expect(num(b, /(\d+) bytes spill loads/), `${k} spill loads`).toBe(0);
          expect(num(b, /(\d+) bytes stack frame/), `${k} stack`).toBe(0);
          expect(num(b, /Used (\d+) registers/), `${k} registers`).toBeLessThanOrEqual(255);
          expect(num(b, /(\d+) bytes smem/), `${k} shared memory`).toBeLessThanOrEqual(48 * 1024);
        }
      },
    );
  }
  it.skipIf(!nvcc)(
    'the PTX of every kernel issues mma.sync.aligned.m16n8k16 bf16 (fp32 accumulation), ldmatrix where chosen',
    () => {
      const ptx = join(out, 'attention_mma.ptx');
      report(nvcc as string, [
        '-O3',
        '--use_fast_math',
        '-arch=sm_90a',
        '-I',
        include,
        '-ptx',
        mmaSrc,
        '-o',
        ptx,
      ]);
      const text = readFileSync(ptx, 'utf8');
      for (const k of mmaKernels) {
        const body = text
          .split(/\.visible \.entry |\.entry /)
          .find((b) => new RegExp(`^\\S*\\d${k}E`).test(b));
        expect(body, `${k} in the PTX`).toBeDefined();
        expect(body, k).toContain('mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32');
        if (k.endsWith('Lb1E')) {
          expect(body, k).toContain('ldmatrix.sync.aligned.m8n8.x4.shared.b16');
          expect(body, k).toContain('ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16');
        } else {
          expect(body, k).not.toContain('ldmatrix');
        }
      }
    },
  );
});

/** hipcc's resource report of one source compiled for gfx90a (native/CMakeLists.txt's flags). */
function hipReport(file: string, obj: string): string {
  return report(
    hipcc as string,
    [
      ...['--offload-arch=gfx90a', '-O3', '-fPIC', '-std=c++17', '-fno-math-errno', '-x', 'hip'],
      ...['-Rpass-analysis=kernel-resource-usage', '-I', include, '-c', file, '-o', join(out, obj)],
    ],
    { ...process.env, HIP_PLATFORM: 'amd' },
  );
}

describe(`attention kernels' scratch on gfx90a (${hipcc ? hipcc : 'skipped: no hipcc on PATH or /opt/rocm/bin'})`, () => {
  it.skipIf(!hipcc)('no scratch (spill) memory in any kernel', () => {
    const text = hipReport(src, 'attention-hip.o');
    for (const k of kernels) {
      const b = section(text, /Function Name: _Z/, k);
      expect(num(b, /ScratchSize \[bytes\/lane\]: (\d+)/), `${k} scratch`).toBe(0);
    }
  });
  // HIP has no mma.sync: attention_mma.cu is host stubs there (MmaAttentionApplies is false).
  it.skipIf(!hipcc)('attention_mma.cu compiles for HIP to no kernels', () => {
    const text = hipReport(mmaSrc, 'mma-hip.o');
    expect(text).not.toMatch(/Function Name: _Z.*Mma/);
  });
});
