// Run by `pnpm pack` / `npm pack` (prepack): builds the addon (incrementally) and copies it to
// prebuilds/<platform>-<arch>/agentrl.node, which the npm package carries and loadNative() finds
// when there is no source build. The addon is compiled for the architecture's baseline with every
// SIMD level inside, chosen at load time (native/README.md), so one x86-64 binary runs on any
// x86-64 CPU. The GPU objects (agentrl_cuda.so, agentrl_hip.so) are not carried: a consumer who
// wants them builds from source. Set AGENTRL_PREBUILD_SKIP_BUILD=1 to copy an existing build only.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const built = resolve(root, 'build/Release/agentrl.node');
if (!process.env.AGENTRL_PREBUILD_SKIP_BUILD) {
  // Build with the switches of the last configure (build.mjs's stamp), so that packing the workspace
  // after `pnpm build` only checks the build is current instead of reconfiguring and rebuilding.
  const env = { ...process.env };
  const stamp = resolve(root, 'build/agentrl-switches.json');
  if (existsSync(stamp)) {
    for (const [k, v] of Object.entries(JSON.parse(readFileSync(stamp, 'utf8')))) {
      if (v === '') delete env[k];
      else env[k] = v;
    }
  }
  const r = spawnSync(process.execPath, [resolve(root, 'scripts/build.mjs')], {
    cwd: root,
    env,
    stdio: 'inherit',
  });
  if (r.status !== 0) process.exit(r.status || 1);
}
if (!existsSync(built)) {
  console.error(`agentrl native prebuild: ${built} does not exist; build it first (node scripts/build.mjs)`);
  process.exit(1);
}
const target = `${process.platform}-${process.arch}`;
rmSync(resolve(root, 'prebuilds'), { recursive: true, force: true });
const out = resolve(root, 'prebuilds', target, 'agentrl.node');
mkdirSync(dirname(out), { recursive: true });
copyFileSync(built, out);
console.log(`agentrl native prebuild: prebuilds/${target}/agentrl.node (${statSync(out).size} bytes)`);
