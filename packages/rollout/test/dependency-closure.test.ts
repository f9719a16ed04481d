// Installing @agentrl/rollout for the agent loop must not install ONNX Runtime, and the agent loop
// never depends on the packages built on it (adapters, scheduler, ONNX): arrows point one way. The
// closure is walked through the installed packages' own package.json files, so a dependency that
// pulls onnxruntime-node in transitively fails here too.
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));

/** The directory of `name` as Node would resolve it from `fromDir`, following pnpm's symlinks. */
function packageDir(name: string, fromDir: string): string {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name, 'package.json');
    if (existsSync(candidate)) return realpathSync(dirname(candidate));
    if (dirname(dir) === dir) throw new Error(`${name} is not installed where ${fromDir} can see it`);
  }
}

/** Every package that `pnpm install` brings in for `dir` as a dependency (devDependencies excluded). */
function runtimeClosure(dir: string): Set<string> {
  const seen = new Set<string>();
  const visit = (pkgDir: string) => {
    const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
    };
    for (const name of Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies })) {
      if (seen.has(name)) continue;
      seen.add(name);
      try {
        visit(packageDir(name, pkgDir));
      } catch {
        // An optional dependency for another platform is not installed: nothing below it either.
      }
    }
  };
  visit(dir);
  return seen;
}

describe('the dependency closure of @agentrl/rollout', () => {
  const closure = runtimeClosure(resolve(here, '..'));

  it('has neither onnxruntime-node nor onnx-proto', () => {
    expect(closure.has('@agentrl/protocol')).toBe(true);
    expect([...closure].filter((n) => /onnx/i.test(n))).toEqual([]);
  });

  it('holds none of the packages built on the agent loop', () => {
    for (const higher of ['@agentrl/engine-adapters', '@agentrl/scheduler', '@agentrl/onnx', 'agentrl'])
      expect(closure.has(higher), higher).toBe(false);
  });

  it('needs neither the engine nor its native addon (the chat template is in @agentrl/protocol)', () => {
    expect(closure.has('@agentrl/engine')).toBe(false);
    expect(closure.has('@agentrl/native')).toBe(false);
  });

  it('is walked deep enough to see onnx-proto where it is (the @agentrl/onnx closure)', () => {
    const onnx = runtimeClosure(resolve(here, '../../onnx'));
    expect(onnx.has('onnx-proto')).toBe(true);
    expect(onnx.has('@agentrl/rollout')).toBe(true);
  });

  it('leaves onnxruntime-node to the user of @agentrl/onnx (an optional peer: its install script must not break installs)', () => {
    const onnx = runtimeClosure(resolve(here, '../../onnx'));
    expect(onnx.has('onnxruntime-node')).toBe(false);
    const manifest = JSON.parse(readFileSync(resolve(here, '../../onnx/package.json'), 'utf8'));
    expect(manifest.peerDependencies['onnxruntime-node']).toBeDefined();
    expect(manifest.peerDependenciesMeta['onnxruntime-node']).toEqual({ optional: true });
  });
});

describe('the packages built on the agent loop', () => {
  const siblings = ['@agentrl/engine-adapters', '@agentrl/scheduler', '@agentrl/onnx'];

  it.each(siblings)('%s depends on the loop and on none of its siblings', (name) => {
    const closure = runtimeClosure(resolve(here, '../..', name.replace('@agentrl/', '')));
    expect(closure.has('@agentrl/rollout')).toBe(true);
    for (const other of siblings) if (other !== name) expect(closure.has(other), other).toBe(false);
    if (name !== '@agentrl/onnx') expect([...closure].filter((n) => /onnx/i.test(n))).toEqual([]);
  });
});
