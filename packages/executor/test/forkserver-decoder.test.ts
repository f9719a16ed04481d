import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ToolStatusSchema } from '@agentrl/protocol';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FORKSERVER_DIR } from '../src/sandbox-spec.js';
import { sleep } from './processes.js';

// The fork server's request decoder, fed directly (outside bubblewrap, as sandbox: "none" runs it): no line,
// however malformed, may leave a descriptor open, crash the server or stop it answering the next call.
const LIMITS = {
  stdin: '',
  timeoutMs: 5000,
  cpuMs: 5000,
  memoryMb: 256,
  maxOutputBytes: 4096,
  maxProcs: 16,
  maxFileMb: 8,
  tmpMb: 16,
  truncate: 'middle',
  lastExpression: false,
};

/** What the fork server may answer a call (protocol's statuses but the rollout's own two). */
const EXECUTOR_STATUSES = ToolStatusSchema.options.filter((s) => s !== 'parse_error' && s !== 'tool_error');

let proc: ChildProcessWithoutNullStreams;
const answers = new Map<number, Record<string, unknown>>();
beforeAll(async () => {
  proc = spawn('python3', ['-I', join(FORKSERVER_DIR, 'forkserver.py')], { stdio: ['pipe', 'pipe', 'pipe'] });
  proc.stderr.resume();
  proc.stdin.on('error', () => {}); // a crashed server: the assertions below say so
  let buf = '';
  proc.stdout.setEncoding('utf8').on('data', (c: string) => {
    buf += c;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const msg = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
      buf = buf.slice(nl + 1);
      if (typeof msg.id === 'number') answers.set(msg.id, msg);
    }
  });
  await call(0, 'print(0)');
});
afterAll(() => {
  proc?.stdin.end();
});

async function waitFor(ms: number, done: () => boolean): Promise<void> {
  for (let i = 0; i < ms / 10 && !done(); i++) await sleep(10);
}

let nextId = 1;
async function call(id: number, code: string): Promise<Record<string, unknown> | undefined> {
  proc.stdin.write(`${JSON.stringify({ id, code, ...LIMITS })}\n`);
  await waitFor(10_000, () => answers.has(id));
  return answers.get(id);
}

const fds = () => readdirSync(`/proc/${proc.pid}/fd`).length;

/** Lines a broken or hostile client could send: each is one request line (no newline inside). */
const badLine = fc.oneof(
  // valid JSON holding strings Python cannot encode (lone surrogates) in each string field
  fc
    .record({
      field: fc.constantFrom('code', 'stdin'),
      text: fc.string({ unit: 'binary', maxLength: 40 }),
      lone: fc.constantFrom('\ud800', '\udfff', '\udc00x', 'a\ud83d'),
    })
    .map(({ field, text, lone }) => ({
      id: true,
      line: { code: 'print(1)', ...LIMITS, [field]: text + lone },
    })),
  // wrong types and missing fields
  fc
    .record({ key: fc.constantFrom(...Object.keys(LIMITS), 'code'), value: fc.jsonValue({ maxDepth: 2 }) })
    .map(({ key, value }) => ({ id: true, line: { code: 'print(1)', ...LIMITS, [key]: value } })),
  // deeply nested JSON (past Python's recursion limit)
  fc.integer({ min: 900, max: 20_000 }).map((d) => ({ id: false, raw: `${'['.repeat(d)}${']'.repeat(d)}` })),
  fc.integer({ min: 900, max: 5_000 }).map((d) => ({
    id: true,
    raw: `{"code": "print(1)", "deep": ${'{"a":'.repeat(d)}1${'}'.repeat(d)}`,
  })),
  // truncated and random bytes
  fc
    .nat({ max: 200 })
    .map((n) => ({ id: false, raw: JSON.stringify({ code: 'print(1)', ...LIMITS }).slice(0, n) })),
  fc.uint8Array({ maxLength: 200 }).map((b) => ({ id: false, raw: Buffer.from(b.filter((x) => x !== 10)) })),
  // huge, with an unencodable character at its end
  fc.constant({ id: true, line: { code: `${'#'.repeat(8 << 20)}\ud800`, ...LIMITS } }),
);

// FC_SEED / FC_PATH replay a failing fast-check case (its seed and path, as printed on failure).
describe('the fork server request decoder (issue 23, class 1)', () => {
  it('leaks no descriptor and keeps answering, whatever lines it is sent', async () => {
    const before = fds();
    await fc.assert(
      fc.asyncProperty(fc.array(badLine, { minLength: 1, maxLength: 8 }), async (lines) => {
        const ids: number[] = [];
        for (const l of lines) {
          if ('line' in l) {
            const id = nextId++;
            ids.push(id);
            proc.stdin.write(
              Buffer.concat([Buffer.from(JSON.stringify({ ...l.line, id })), Buffer.from('\n')]),
            );
          } else {
            proc.stdin.write(Buffer.concat([Buffer.from(l.raw), Buffer.from('\n')]));
          }
        }
        const good = nextId++;
        const r = await call(good, 'print("good")');
        expect(r).toMatchObject({ status: 'ok', stdout: 'good\n' });
        // every line that carried an id is answered (a type error or an unencodable string alone); the fork
        // server answers calls as they finish, so a valid call sent before the good one may answer after it
        await waitFor(10_000, () => ids.every((id) => answers.has(id)));
        // (fuzzed limits are valid too: a 5e-324 ms timeout is answered `timeout`, a tiny memoryMb `memory_exceeded`)
        for (const id of ids) expect(EXECUTOR_STATUSES).toContain(answers.get(id)?.status);
      }),
      {
        numRuns: 60,
        ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH } : {}),
      },
    );
    expect(proc.exitCode).toBeNull();
    expect(fds()).toBe(before);
  }, 120_000);

  it('10,000 lone-surrogate requests leave every descriptor closed', async () => {
    const before = fds();
    const first = nextId;
    const batch = Array.from({ length: 10_000 }, () => {
      const id = nextId++;
      return `${JSON.stringify({ id, code: 'print(1)', ...LIMITS, stdin: '\ud800' })}\n`;
    });
    proc.stdin.write(batch.join(''));
    await waitFor(30_000, () => answers.has(nextId - 1));
    expect(answers.get(first)).toMatchObject({ status: 'sandbox_error' });
    expect(String(answers.get(first)?.stderr)).toMatch(/surrogate/);
    expect(fds()).toBe(before);
    expect(await call(nextId++, 'print("after")')).toMatchObject({ status: 'ok', stdout: 'after\n' });
  }, 60_000);
});
