// Builds the addon with cmake-js. cmake-js configures only when build/ has no CMakeCache.txt, so the
// switches (AGENTRL_CUDA, AGENTRL_HIP, their *_ARCH) would stick from the first configure; this
// script re-runs `cmake-js configure` whenever they change, then builds, and prints which GPU
// backends were compiled so the build log shows it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const env = { ...process.env };
// nvcc usually lives outside PATH; AUTO should still find the standard install.
if (!env.CUDACXX && existsSync('/usr/local/cuda/bin/nvcc') && !onPath('nvcc')) {
  env.CUDACXX = '/usr/local/cuda/bin/nvcc';
}
const keys = ['AGENTRL_CUDA', 'AGENTRL_HIP', 'AGENTRL_CUDA_ARCH', 'AGENTRL_HIP_ARCH', 'CUDACXX'];
const switches = JSON.stringify(Object.fromEntries(keys.map((k) => [k, env[k] ?? ''])));
const stamp = resolve(root, 'build/agentrl-switches.json');
const previous = existsSync(stamp) ? readFileSync(stamp, 'utf8') : '';
const cmakeJs = resolve(root, 'node_modules/.bin/cmake-js');

if (previous !== switches || !existsSync(resolve(root, 'build/CMakeCache.txt'))) {
  run([cmakeJs, 'configure', '--log-level', 'warn']);
  mkdirSync(dirname(stamp), { recursive: true });
  writeFileSync(stamp, switches);
}
run([cmakeJs, 'build', '--log-level', 'warn']);
const cache = readFileSync(resolve(root, 'build/CMakeCache.txt'), 'utf8');
const built = ['agentrl_cuda.so', 'agentrl_hip.so'].filter((f) =>
  existsSync(resolve(root, 'build/Release', f)),
);
const setting = (k) => cache.match(new RegExp(`^${k}:STRING=(.*)$`, 'm'))?.[1] ?? '?';
console.log(
  `agentrl native: built agentrl.node + [${built.join(', ') || 'no GPU objects'}] ` +
    `(AGENTRL_CUDA=${setting('AGENTRL_CUDA')}, AGENTRL_HIP=${setting('AGENTRL_HIP')})`,
);

function run(argv) {
  const r = spawnSync(argv[0], argv.slice(1), { cwd: root, env, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

function onPath(bin) {
  return (env.PATH ?? '').split(':').some((d) => d && existsSync(resolve(d, bin)));
}
