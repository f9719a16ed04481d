import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// The tensor-core attention's kernels (native/src/engine/cuda/attention_mma.cu), unchanged, run on
// the host: g++ builds them against fixtures/mma_emulate.h (a block as 128 fibers, barriers,
// shuffles, and mma.sync m16n8k16 assembled from the 32 lanes' bf16 fragments by the PTX ISA's
// tables) and fixtures/mma_attention_emulate.cc compares forward (out, lse) and backward (dq, dk,
// dv) with a float64 causal attention over a packed GQA batch whose lengths cross every tile, at
// head_dim 128 and 64, and over a batch of 13 tokens (less than one warp's rows live), each with
// the fragments read by ldmatrix (AGENTRL_GPU_ATTENTION=mma) and by plain loads (mma-lds). The
// kernels round q / k / v / dO, P and dS to bf16, hence the bound. This is the closest run
// possible without a GPU; the real one is test/attention-mma.test.ts.
const TOL = 2e-2;
const fixtures = fileURLToPath(new URL('./fixtures', import.meta.url));
const include = fileURLToPath(new URL('../../../native/src', import.meta.url));
const gxx = ['/usr/bin/g++', '/usr/local/bin/g++'].find((p) => existsSync(p));
const out = mkdtempSync(join(tmpdir(), 'agentrl-mma-emu-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe(`tensor-core attention kernels emulated on the host (${gxx ?? 'skipped: no g++ in /usr/bin or /usr/local/bin'})`, () => {
  it.skipIf(!gxx)(
    `forward and backward at head_dim 128 (GQA 2:1) and 64 (GQA 4:1) within ${TOL} of float64`,
    { timeout: 300_000 },
    () => {
      const bin = join(out, 'mma_attention_emulate');
      const cc = spawnSync(
        gxx as string,
        [
          ...['-std=c++20', '-O2', '-fno-strict-aliasing', '-Wno-unknown-pragmas'],
          ...['-DAGENTRL_MMA_EMULATE', '-I', fixtures, '-I', include],
          ...[join(fixtures, 'mma_attention_emulate.cc'), '-o', bin],
        ],
        { encoding: 'utf8' },
      );
      expect(cc.status, `g++: ${cc.stderr}`).toBe(0);
      const r = spawnSync(bin, [String(TOL)], { encoding: 'utf8', timeout: 280_000 });
      const lines = r.stdout.trim().split('\n');
      expect(
        lines.filter((l) => / rel /.test(l)),
        r.stdout,
      ).toHaveLength(30);
      expect(lines.at(-1), r.stdout).toBe('ok');
      expect(r.status).toBe(0);
    },
  );
});
