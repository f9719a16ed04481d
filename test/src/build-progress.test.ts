import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from './cli.js';

/** `pnpm train`'s build step (scripts/build-progress.mjs): progress lines instead of minutes of silence. */
const SCRIPT = join(REPO, 'scripts/build-progress.mjs');
type Reporter = { line(text: string): void; done(code: number): void };
const { createBuildReporter } = (await import(SCRIPT)) as {
  createBuildReporter(write: (l: string) => void, now: () => number): Reporter;
};

describe('build progress', () => {
  it('says the native addon is building and how far, from turbo and ninja lines', () => {
    const out: string[] = [];
    let t = 0;
    const r = createBuildReporter(
      (l) => out.push(l),
      () => t,
    );
    r.line('@agentrl/protocol:build: cache hit, suppressing logs 1a2b');
    r.line('@agentrl/native:build: cache miss, executing 79455e3a1cd2d691');
    r.line('@agentrl/native:build: $ node scripts/build.mjs && tsc -p tsconfig.build.json');
    for (let i = 1; i <= 40; i++) {
      t += 3000;
      r.line(`@agentrl/native:build: [${i}/40] Building CXX object CMakeFiles/agentrl.dir/src/f${i}.cc.o`);
    }
    r.line('agentrl:build: cache miss, executing 5e6f');
    t += 1000;
    r.done(0);
    expect(out[0]).toBe('agentrl: building the workspace (the first time takes a few minutes)');
    expect(out[1]).toMatch(/^agentrl: building the native addon \(C\+\+; first time a few minutes/);
    const percents = out
      .filter((l) => l.startsWith('agentrl: native addon '))
      .map((l) => Number(/(\d+)%/.exec(l)![1]));
    expect(percents[0]).toBe(2);
    expect(percents.at(-1)).toBe(100);
    expect(percents.length).toBeGreaterThanOrEqual(10);
    expect(percents.length).toBeLessThanOrEqual(12);
    expect(out.at(-2)).toBe('agentrl: building agentrl');
    expect(out.at(-1)).toBe('agentrl: build done in 121 s');
  });

  it('is silent when everything is cached, and prints the failing task log on failure', () => {
    const quiet: string[] = [];
    const cached = createBuildReporter(
      (l) => quiet.push(l),
      () => 0,
    );
    cached.line('agentrl:build: cache hit, suppressing logs 5e6f');
    cached.done(0);
    expect(quiet).toEqual([]);
    const out: string[] = [];
    const failed = createBuildReporter(
      (l) => out.push(l),
      () => 0,
    );
    failed.line('@agentrl/grpo:build: cache miss, executing 99');
    failed.line("@agentrl/grpo:build: src/roc.ts(3,1): error TS2304: Cannot find name 'x'.");
    failed.done(2);
    expect(out).toContain("@agentrl/grpo:build: src/roc.ts(3,1): error TS2304: Cannot find name 'x'.");
    expect(out.at(-1)).toMatch(/the build failed \(turbo exit 2\); fix the error above/);
  });

  it('drives the real turbo build', () => {
    const r = spawnSync(process.execPath, [SCRIPT, '--filter=@agentrl/protocol', '--force'], {
      cwd: REPO,
      encoding: 'utf8',
      env: { ...process.env, PATH: `${join(REPO, 'node_modules/.bin')}:${process.env.PATH}` },
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /^agentrl: building the workspace .*\nagentrl: building @agentrl\/protocol\nagentrl: build done in \d+ s\n$/,
    );
  });
});
