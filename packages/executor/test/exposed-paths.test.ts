import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedPool } from '../src/embedded-pool.js';
import { ExecutorError } from '../src/errors.js';
import { startServeCli } from './processes.js';

// rStar2-Agent's reward program imports a module installed in the caller's checkout
// (microsoft/rStar rstar2_agent/reward/server.py: `from fused_compute_score import compute_score`).
// Here that checkout lives under /tmp, which each call's own tmpfs used to hide.
let root: string;
let site: string;
let answer: string;
beforeAll(() => {
  root = mkdtempSync('/tmp/agentrl-exposed-');
  site = join(root, 'site');
  mkdirSync(site);
  writeFileSync(
    join(site, 'fused_compute_score.py'),
    'def compute_score(a, b):\n    return float(a.strip() == b.strip())\n',
  );
  mkdirSync(join(root, 'data'));
  answer = join(root, 'data', 'answer.txt');
  writeFileSync(answer, '42\n');
  chmodSync(answer, 0o666); // only the read-only mount may refuse the write
  writeFileSync(join(root, 'data', 'not-exposed.txt'), 'secret');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const reward = () =>
  [
    'from fused_compute_score import compute_score',
    `print(compute_score("42", open(${JSON.stringify(answer)}).read()))`,
    'import subprocess, sys',
    'print(subprocess.run([sys.executable, "-c", "import fused_compute_score; print(\'in a subprocess too\')"], capture_output=True, text=True).stdout.strip())',
    'try:',
    `    open(${JSON.stringify(answer)}, "a")`,
    'except OSError as e:',
    '    print("write:", e.strerror)',
    `import os; print(os.path.exists(${JSON.stringify(join(root, 'data', 'not-exposed.txt'))}))`,
    'open("/tmp/scratch", "w").write("x"); print("own /tmp writable")',
  ].join('\n');
const expected = '1.0\nin a subprocess too\nwrite: Read-only file system\nFalse\nown /tmp writable\n';

describe('read-only paths and PYTHONPATH entries exposed to calls (issue 14, item 6)', () => {
  it('a module on pythonPath and a file on extraReadOnly under /tmp are importable and readable, not writable', async () => {
    const pool = await new EmbeddedPool({
      servers: 1,
      preload: [],
      leanServer: false,
      pythonPath: [site],
      extraReadOnly: [answer],
    }).start();
    try {
      expect(await pool.run({ code: reward() })).toMatchObject({
        status: 'ok',
        stdout: expected,
        stderr: '',
      });
      // the same in every call, not only in the first one
      const again = await pool.runBatch([{ code: reward() }, { code: reward() }]);
      expect(again.map((r) => r.stdout)).toEqual([expected, expected]);
    } finally {
      await pool.close();
    }
  });

  it('refuses relative, missing and whole-system paths with an error that names them', () => {
    const bad = (input: Record<string, string[]>, msg: RegExp) => {
      const attempt = () => new EmbeddedPool({ servers: 1, preload: [], ...input });
      expect(attempt).toThrow(ExecutorError);
      expect(attempt).toThrow(msg);
    };
    bad({ pythonPath: ['site-packages'] }, /pythonPath \(--pythonpath\): "site-packages" cannot be exposed/);
    bad(
      { extraReadOnly: [join(root, 'nope')] },
      /extraReadOnly \(--read-only\): \/tmp\/agentrl-exposed-\w+\/nope does not exist/,
    );
    bad({ extraReadOnly: ['/'] }, /cannot be exposed/);
    bad({ extraReadOnly: ['/proc/1'] }, /cannot be exposed/);
  });

  it('the serve CLI takes --read-only, --pythonpath and --max-output-bytes', async () => {
    const { url, proc } = await startServeCli([
      '--servers',
      '1',
      '--preload',
      '',
      '--pythonpath',
      site,
      '--read-only',
      answer,
      '--max-output-bytes',
      '200',
    ]);
    try {
      const run = async (code: string) => {
        const res = await request(`${url}/v1/run`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ code }),
        });
        return (await res.body.json()) as { status: string; stdout: string; stdoutBytes: number };
      };
      expect(await run(reward())).toMatchObject({ status: 'ok', stdout: expected });
      const long = await run('print("x" * 1000)');
      expect(long).toMatchObject({ status: 'output_truncated', stdoutBytes: 1001 });
      expect(long.stdout.length).toBeLessThan(260);
    } finally {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    }
  });
});
