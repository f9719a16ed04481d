import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// The tensor-core attention's index math on the host (no GPU): native/src/engine/cuda/
// mma_fragments.h, the lane -> (row, column) maps of mma.sync.m16n8k16's A, B and C fragments that
// attention_mma.cu fills its registers with, checked by fixtures/mma_fragments_check.cc (coverage,
// one product assembled from the fragments, the S = Q K^T -> P V chaining the kernels use, and the
// ldmatrix.x4 address maps).
const check = fileURLToPath(new URL('./fixtures/mma_fragments_check.cc', import.meta.url));
const include = fileURLToPath(new URL('../../../native/src', import.meta.url));
const gxx = ['/usr/bin/g++', '/usr/local/bin/g++'].find((p) => existsSync(p));
const out = mkdtempSync(join(tmpdir(), 'agentrl-mma-frag-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe(`mma.sync fragment maps (${gxx ?? 'skipped: no g++ in /usr/bin or /usr/local/bin'})`, () => {
  it.skipIf(!gxx)('cover each tile once and chain Q K^T into P V as the kernels do', () => {
    const bin = join(out, 'mma_fragments_check');
    const cc = spawnSync(
      gxx as string,
      ['-std=c++17', '-O1', '-Wall', '-Werror', '-I', include, check, '-o', bin],
      {
        encoding: 'utf8',
      },
    );
    expect(cc.status, `g++: ${cc.stderr}`).toBe(0);
    const r = spawnSync(bin, [], { encoding: 'utf8' });
    expect(r.stdout.trim()).toBe('ok');
    expect(r.status).toBe(0);
  });
});
