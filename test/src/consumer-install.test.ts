// A library consumer's path, as CI can take it: every publishable workspace package packed with
// `pnpm pack` (the native package's prepack puts the prebuilt addon in its tarball), the tarballs
// installed with plain `npm install` into a fresh ES-module project under the OS temp dir (no
// ONNXRUNTIME_NODE_INSTALL, no workspace), and the README's library example run there as written.
// It also checks that @agentrl/rollout installs and renders a chat prompt without the engine or the
// native addon, and that a consumer without a prebuilt addon gets commands that work outside the
// workspace. Needs the npm registry (for the packages' third-party dependencies) and a built
// workspace (`pnpm build`). Writes its figures to bench-results/consumer-install.json.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseExampleOutput, REPO_ROOT, readmeLibraryExample, TINY_RUN_FIXTURE } from './readme-example.js';

const work = mkdtempSync(join(tmpdir(), 'agentrl-consumer-'));
const tarballs = join(work, 'tarballs');

/** The environment of a consumer's shell: no workspace switches, no pnpm-injected npm settings. */
function consumerEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    // pnpm's bin shims (npx vitest) set NODE_PATH to the workspace's store: a consumer has none.
    if (k === 'ONNXRUNTIME_NODE_INSTALL' || k === 'NODE_PATH' || k.startsWith('AGENTRL_')) continue;
    if (/^npm_/i.test(k) && !/registry|cache|proxy/i.test(k)) continue;
    env[k] = v;
  }
  return env;
}

/** The workspace's publishable packages: every package folder whose package.json is not private. */
function publishableDirs(): string[] {
  const dirs = ['native'];
  for (const parent of ['packages', 'apps']) {
    for (const name of readdirSync(join(REPO_ROOT, parent))) dirs.push(join(parent, name));
  }
  return dirs.filter((d) => {
    const p = join(REPO_ROOT, d, 'package.json');
    return existsSync(p) && !JSON.parse(readFileSync(p, 'utf8')).private;
  });
}

/** A fresh `"type": "module"` npm project with `files` installed by plain npm; returns its time. */
function npmProject(name: string, files: string[]): { dir: string; seconds: number } {
  const dir = join(work, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }));
  const start = performance.now();
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...files], {
    cwd: dir,
    env: consumerEnv(),
    encoding: 'utf8',
    timeout: 150_000,
  });
  const seconds = (performance.now() - start) / 1000;
  expect(r.stderr.replace(/npm warn.*\n?/gi, ''), 'npm install wrote errors').toBe('');
  expect(r.status, `npm install failed:\n${r.stdout}\n${r.stderr}`).toBe(0);
  return { dir, seconds };
}

let consumer = '';
const figures: Record<string, unknown> = {};

beforeAll(() => {
  mkdirSync(tarballs);
  for (const d of publishableDirs()) {
    execFileSync('pnpm', ['pack', '--pack-destination', tarballs], {
      cwd: join(REPO_ROOT, d),
      stdio: 'ignore',
    });
  }
  const files = readdirSync(tarballs).map((f) => join(tarballs, f));
  const project = npmProject('consumer', files);
  consumer = project.dir;
  const git = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' });
  const commit = git.status === 0 ? git.stdout.trim() : 'unknown (not a git checkout)';
  Object.assign(figures, {
    commit,
    node: process.version,
    tarballs: files.length,
    tarballBytes: files.reduce((n, f) => n + statSync(f).size, 0),
    nativeTarballBytes: statSync(files.find((f) => f.includes('agentrl-native-'))!).size,
    installSeconds: Number(project.seconds.toFixed(1)),
  });
}, 240_000);

afterAll(() => {
  // beside the benches' figures (git-ignored), not among the vitest reports CI sums up
  const dir = join(REPO_ROOT, 'bench-results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'consumer-install.json'), `${JSON.stringify(figures, null, 2)}\n`);
  rmSync(work, { recursive: true, force: true });
}, 60_000);

describe('a consumer project with the packed tarballs', () => {
  it('carries the prebuilt addon and no onnxruntime-node', () => {
    expect(existsSync(join(consumer, 'node_modules/@agentrl/native/prebuilds/linux-x64/agentrl.node'))).toBe(
      process.platform === 'linux' && process.arch === 'x64',
    );
    expect(existsSync(join(consumer, 'node_modules/onnxruntime-node'))).toBe(false);
  });

  it('runs the README library example as written, and it exits by itself', () => {
    writeFileSync(join(consumer, 'example.mjs'), readmeLibraryExample());
    cpSync(TINY_RUN_FIXTURE, join(consumer, 'runs/tiny'), { recursive: true });
    const start = performance.now();
    const r = spawnSync(process.execPath, ['example.mjs'], {
      cwd: consumer,
      env: consumerEnv(),
      encoding: 'utf8',
      timeout: 120_000,
    });
    figures.exampleSeconds = Number(((performance.now() - start) / 1000).toFixed(1));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = parseExampleOutput(r.stdout);
    expect(out.rewards).toHaveLength(16);
    expect(out.rewards).toContain(1);
    expect(out.rewards).toContain(0);
    expect(out.advantages).toHaveLength(8);
    expect(out.advantages.some((a) => a > 0) && out.advantages.some((a) => a < 0)).toBe(true);
  }, 150_000);

  it('without a prebuilt addon, names the package build script and what the build lacks', () => {
    const native = join(consumer, 'node_modules/@agentrl/native');
    renameSync(join(native, 'prebuilds'), join(native, 'prebuilds.off'));
    try {
      const load = spawnSync(
        process.execPath,
        ['--input-type=module', '-e', "import('@agentrl/native').then((m) => m.loadNative())"],
        { cwd: consumer, env: consumerEnv(), encoding: 'utf8' },
      );
      expect(load.status).not.toBe(0);
      expect(load.stderr).toContain(`node ${join(native, 'scripts/build.mjs')}`);
      expect(load.stderr).toMatch(/carries no prebuilt addon for linux-x64|no prebuilt addon for/);
      expect(load.stderr).not.toMatch(/pnpm/);
      // cmake-js is not a dependency: the build script says so and how to get it, then stops.
      const build = spawnSync(process.execPath, [join(native, 'scripts/build.mjs')], {
        cwd: consumer,
        env: consumerEnv(),
        encoding: 'utf8',
      });
      expect(build.status).toBe(1);
      expect(build.stderr).toContain('missing:');
      expect(build.stderr).toContain('`npm install --no-save cmake-js@^8`');
      expect(existsSync(join(native, 'build'))).toBe(false);
    } finally {
      renameSync(join(native, 'prebuilds.off'), join(native, 'prebuilds'));
    }
  });
});

describe('@agentrl/rollout on its own', () => {
  it('installs with protocol alone (no engine, no native addon) and renders the trainer layout', () => {
    const files = readdirSync(tarballs)
      .filter((f) => /^agentrl-(protocol|rollout)-\d/.test(f))
      .map((f) => join(tarballs, f));
    expect(files).toHaveLength(2);
    const { dir } = npmProject('rollout-only', files);
    expect(readdirSync(join(dir, 'node_modules/@agentrl')).sort()).toEqual(['protocol', 'rollout']);
    const script =
      "import { CHATML_TEMPLATE, createChatFormat } from '@agentrl/rollout';" +
      "process.stdout.write(createChatFormat({ template: CHATML_TEMPLATE }).renderPrompt([{ role: 'user', content: '2+2?' }]));";
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n');
  }, 150_000);
});
