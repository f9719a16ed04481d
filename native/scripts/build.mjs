// Builds the addon from source with cmake-js: in the agentrl workspace (`pnpm --filter @agentrl/native
// build`) and in a consumer's node_modules (`node node_modules/@agentrl/native/scripts/build.mjs`),
// where the npm package carries no prebuilt addon for the platform. It first checks what the build
// needs (cmake-js, cmake >= 3.18, a C++17 compiler, the sources) and names everything missing at once.
// cmake-js configures only when build/ has no CMakeCache.txt, so the switches (AGENTRL_CUDA,
// AGENTRL_HIP, their *_ARCH) would stick from the first configure; this script re-runs `cmake-js
// configure` whenever they change, then builds, and prints which GPU backends were compiled.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findCmakeJs, missingForBuild } from './preflight.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const env = { ...process.env };
// nvcc usually lives outside PATH; AUTO should still find the standard install.
if (!env.CUDACXX && existsSync('/usr/local/cuda/bin/nvcc') && !onPath('nvcc')) {
  env.CUDACXX = '/usr/local/cuda/bin/nvcc';
}
const missing = missingForBuild(root, env);
if (missing.length > 0) {
  console.error(
    [
      `agentrl native: cannot build the addon in ${root}; missing:`,
      ...missing.map((m) => `  - ${m}`),
      `then run again: node ${resolve(root, 'scripts/build.mjs')}`,
    ].join('\n'),
  );
  process.exit(1);
}
const keys = ['AGENTRL_CUDA', 'AGENTRL_HIP', 'AGENTRL_CUDA_ARCH', 'AGENTRL_HIP_ARCH', 'CUDACXX'];
const switches = JSON.stringify(Object.fromEntries(keys.map((k) => [k, env[k] ?? ''])));
const stamp = resolve(root, 'build/agentrl-switches.json');
const previous = existsSync(stamp) ? readFileSync(stamp, 'utf8') : '';
const cmakeJs = findCmakeJs(root);

if (previous !== switches || !existsSync(resolve(root, 'build/CMakeCache.txt'))) {
  run('configure', [process.execPath, cmakeJs, 'configure', '--log-level', 'warn']);
  mkdirSync(dirname(stamp), { recursive: true });
  writeFileSync(stamp, switches);
}
run('build', [process.execPath, cmakeJs, 'build', '--log-level', 'warn']);
const cache = readFileSync(resolve(root, 'build/CMakeCache.txt'), 'utf8');
const built = ['agentrl_cuda.so', 'agentrl_hip.so'].filter((f) =>
  existsSync(resolve(root, 'build/Release', f)),
);
const setting = (k) => cache.match(new RegExp(`^${k}:STRING=(.*)$`, 'm'))?.[1] ?? '?';
console.log(
  `agentrl native: built agentrl.node + [${built.join(', ') || 'no GPU objects'}] ` +
    `(AGENTRL_CUDA=${setting('AGENTRL_CUDA')}, AGENTRL_HIP=${setting('AGENTRL_HIP')})`,
);

function run(step, argv) {
  const r = spawnSync(argv[0], argv.slice(1), { cwd: root, env, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(
      `agentrl native: cmake-js ${step} failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`}); ` +
        `the compiler's or CMake's message is above. Delete ${resolve(root, 'build')} and run again after fixing it.`,
    );
    process.exit(r.status || 1);
  }
}

function onPath(bin) {
  return (env.PATH ?? '').split(':').some((d) => d && existsSync(resolve(d, bin)));
}
