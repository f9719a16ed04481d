#!/usr/bin/env node
// `pnpm train`'s build step: turbo builds the trainer and what it needs, and this prints what is
// happening instead of minutes of silence. A first build compiles the native addon (C++, a few
// minutes on 2 cores); its ninja steps are shown as a percentage. When everything is cached it
// prints nothing; when a task fails it prints that task's whole log, as --output-logs=errors-only did.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const DEFAULT_ARGS = ['--filter=agentrl...'];

/**
 * Turns turbo's `--output-logs=new-only` lines into a few progress lines. `write` gets whole lines;
 * `now` is a clock in ms. Returns `line(text)` for each line of turbo's output and `done(code)`.
 */
export function createBuildReporter(write, now = Date.now) {
  const started = now();
  const logs = new Map(); // task -> its lines, printed if the build fails
  let building = false;
  let nativePercent = -10;
  let nativeAt = 0;
  return {
    line(text) {
      const m = /^(@?[\w./-]+):build: (.*)$/.exec(text);
      if (!m) return;
      const [, pkg, rest] = m;
      logs.set(pkg, [...(logs.get(pkg) ?? []), text]);
      if (/^cache (miss|bypass)/.test(rest)) {
        if (!building) write('agentrl: building the workspace (the first time takes a few minutes)');
        building = true;
        write(
          pkg === '@agentrl/native'
            ? 'agentrl: building the native addon (C++; first time a few minutes on 2 cores, later runs reuse it)'
            : `agentrl: building ${pkg}`,
        );
        return;
      }
      const step = /^\[(\d+)\/(\d+)\] /.exec(rest);
      if (pkg === '@agentrl/native' && step && Number(step[2]) > 2) {
        const percent = Math.floor((100 * Number(step[1])) / Number(step[2]));
        // every 10 % and the last step, or every 15 s when a single file takes long
        if (percent >= nativePercent + 10 || percent === 100 || now() - nativeAt >= 15_000) {
          nativePercent = percent;
          nativeAt = now();
          write(`agentrl: native addon ${percent}% (${step[1]}/${step[2]} compile steps)`);
        }
      }
    },
    done(code) {
      if (code !== 0) {
        for (const [pkg, lines] of logs)
          if (lines.some((l) => /error|failed/i.test(l)) || logs.size === 1) {
            write(`agentrl: the build of ${pkg} failed:`);
            for (const l of lines) write(l);
          }
        write(
          `agentrl: the build failed (turbo exit ${code}); fix the error above, then run pnpm train again`,
        );
      } else if (building) {
        write(`agentrl: build done in ${Math.round((now() - started) / 1000)} s`);
      }
    },
  };
}

async function main(argv) {
  const args = ['run', 'build', ...(argv.length ? argv : DEFAULT_ARGS), '--output-logs=new-only'];
  const child = spawn('turbo', args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, FORCE_COLOR: '0' },
  });
  const reporter = createBuildReporter((l) => process.stderr.write(`${l}\n`));
  for (const stream of [child.stdout, child.stderr])
    createInterface({ input: stream }).on('line', reporter.line);
  const code = await new Promise((resolve) => {
    child.on('error', (err) => {
      process.stderr.write(`agentrl: cannot run turbo (${err.message}); run pnpm install first\n`);
      resolve(127);
    });
    child.on('close', (c) => resolve(c ?? 1));
  });
  reporter.done(code);
  process.exitCode = code;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main(process.argv.slice(2));
