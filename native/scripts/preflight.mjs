// What a source build of the addon needs, checked before cmake-js runs so that a missing piece is
// named with the command that installs it (instead of CMake's first error, or nothing).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';

/** cmake-js's CLI script: resolved from the package (its node_modules or any above), else undefined. */
export function findCmakeJs(root) {
  try {
    const pkgPath = createRequire(resolve(root, 'package.json')).resolve('cmake-js/package.json');
    const bin = JSON.parse(readFileSync(pkgPath, 'utf8')).bin;
    const rel = typeof bin === 'string' ? bin : bin?.['cmake-js'];
    return rel ? resolve(dirname(pkgPath), rel) : undefined;
  } catch {
    return undefined;
  }
}

/** Everything the build lacks, each with what to run; [] when it can start. */
export function missingForBuild(root, env = process.env) {
  const missing = [];
  for (const f of ['CMakeLists.txt', 'src/addon.cc']) {
    if (!existsSync(resolve(root, f))) {
      missing.push(`${f} (the package's sources are incomplete; reinstall @agentrl/native)`);
    }
  }
  if (!findCmakeJs(root)) {
    missing.push('the cmake-js npm package: `npm install --no-save cmake-js@^8` in your project');
  }
  const cmake = spawnSync('cmake', ['--version'], { env, encoding: 'utf8' });
  const version = cmake.stdout?.match(/cmake version (\d+)\.(\d+)/);
  if (cmake.error || !version) {
    missing.push('cmake >= 3.18: `apt-get install cmake` (or https://cmake.org/download)');
  } else if (Number(version[1]) < 3 || (Number(version[1]) === 3 && Number(version[2]) < 18)) {
    missing.push(
      `cmake >= 3.18 (found ${version[1]}.${version[2]}): install a newer cmake (\`pip install cmake\`)`,
    );
  }
  const compilers = [env.CXX, 'c++', 'g++', 'clang++'].filter(Boolean);
  if (!compilers.some((c) => !spawnSync(c, ['--version'], { env }).error)) {
    missing.push(`a C++17 compiler (tried ${compilers.join(', ')}): \`apt-get install g++\` or set CXX`);
  }
  try {
    createRequire(resolve(root, 'package.json')).resolve('node-addon-api');
  } catch {
    missing.push('node-addon-api (a dependency of @agentrl/native): reinstall @agentrl/native');
  }
  return missing;
}
