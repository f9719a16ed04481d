import { spawnSync } from 'node:child_process';
import type { ToolOutcome } from '@agentrl/protocol';
import { describe, expect, it } from 'vitest';
import { generateMultiplySplit, parseFactors, zeroPadded } from './multiply.js';
import { buildSftDemos } from './sft-data.js';

/** A real Python run (the executor package is the production path; this test only needs outputs). */
function runPython(code: string): Promise<ToolOutcome> {
  const t0 = performance.now();
  const r = spawnSync('python3', ['-c', code], { encoding: 'utf8' });
  return Promise.resolve({
    status: r.status === 0 ? 'ok' : 'runtime_error',
    stdout: r.stdout,
    stderr: r.stderr,
    exitCode: r.status,
    signal: r.signal,
    wallMs: performance.now() - t0,
    cpuMs: null,
  });
}

describe('synthetic multiplication task', () => {
  const opts = { seed: 3, digits: [3, 3] as const, trainSize: 300, heldOutSize: 50 };

  it('is a pure function of the seed, with disjoint splits and exact answers', () => {
    const a = generateMultiplySplit(opts);
    expect(generateMultiplySplit(opts)).toEqual(a);
    expect(generateMultiplySplit({ ...opts, seed: 4 })).not.toEqual(a);
    expect(a.train).toHaveLength(300);
    expect(a.heldOut).toHaveLength(50);
    const key = (q: string) =>
      parseFactors(q)!
        .map(Number)
        .sort((x, y) => x - y)
        .join('x');
    const train = new Set(a.train.map((p) => key(p.question)));
    for (const p of a.heldOut) expect(train.has(key(p.question))).toBe(false);
    for (const p of [...a.train, ...a.heldOut]) {
      const [x, y] = parseFactors(p.question)!;
      expect(p.answer).toBe(String(BigInt(x) * BigInt(y)));
      expect(x).toHaveLength(3);
    }
  });

  it('refuses more problems than the digit space holds', () => {
    expect(() => generateMultiplySplit({ seed: 1, digits: [1, 1], trainSize: 100, heldOutSize: 10 })).toThrow(
      /distinct pairs/,
    );
  });
});

describe('SFT cold-start demonstrations', () => {
  it('mixes clean tool use, no-tool answers and corrected tool errors, with real tool outputs', async () => {
    const { train } = generateMultiplySplit({ seed: 1, digits: [3, 3], trainSize: 30, heldOutSize: 5 });
    const demos = await buildSftDemos(train, {
      seed: 1,
      examples: 30,
      mix: { tool: 0.4, noTool: 0.4, toolErrorFixed: 0.2 },
      systemPrompt: null,
      runTool: runPython,
      renderToolResponse: (o) =>
        `<tool_response>\n${(o.stdout + o.stderr).trim().split('\n').at(-1)}\n</tool_response>`,
    });
    const kinds = new Map<string, number>();
    for (const d of demos) kinds.set(d.kind, (kinds.get(d.kind) ?? 0) + 1);
    expect(Object.fromEntries(kinds)).toEqual({ tool: 12, noTool: 12, toolErrorFixed: 6 });
    for (const d of demos) {
      const problem = train.find((p) => p.id === d.problemId)!;
      const last = d.messages.at(-1)!;
      expect(last.role).toBe('assistant');
      expect(last.content).toBe(`\\boxed{${problem.answer}}`);
      const calls = d.messages.filter((m) => m.role === 'assistant' && m.content.startsWith('<tool_call>'));
      expect(calls).toHaveLength({ tool: 1, noTool: 0, toolErrorFixed: 2, transcript: -1 }[d.kind]);
      for (const c of calls) {
        const json = JSON.parse(c.content.slice('<tool_call>'.length, -'</tool_call>'.length));
        expect(json.name).toBe('python');
        expect(typeof json.arguments.code).toBe('string');
      }
      if (d.kind === 'toolErrorFixed') expect(d.messages[3]!.content).toMatch(/Error/);
      if (d.kind === 'tool') expect(d.messages[3]!.content).toContain(problem.answer);
    }
  });
});

describe('the zero-padded task (roc preset)', () => {
  const opts = { seed: 2, digits: [3, 3] as const, trainSize: 400, heldOutSize: 40 };

  it('writes a share of the factors with a leading zero; pairs, answers and the default split are unchanged', () => {
    const plain = generateMultiplySplit(opts);
    expect(generateMultiplySplit({ ...opts, zeroPadShare: 0 })).toEqual(plain);
    const padded = generateMultiplySplit({ ...opts, zeroPadShare: 0.5 });
    const all = [...padded.train, ...padded.heldOut];
    const zp = all.filter((p) => parseFactors(p.question)!.some(zeroPadded));
    expect(zp.length / all.length).toBeGreaterThan(0.4);
    expect(zp.length / all.length).toBeLessThan(0.6);
    all.forEach((p, i) => {
      const [a, b] = parseFactors(p.question)!;
      expect(zeroPadded(a) && zeroPadded(b)).toBe(false);
      expect(p.answer).toBe(String(BigInt(a) * BigInt(b)));
      expect(p.answer).toBe([...plain.train, ...plain.heldOut][i]!.answer);
    });
  });

  it('demonstrations: the literal copy of a padded factor fails in real Python, int() fixes it', async () => {
    const { train } = generateMultiplySplit({ ...opts, trainSize: 40, zeroPadShare: 1 });
    const demos = await buildSftDemos(train, {
      seed: 1,
      examples: 40,
      mix: { tool: 0.5, noTool: 0, toolErrorFixed: 0.5 },
      systemPrompt: null,
      runTool: runPython,
      renderToolResponse: (o) => `<tool_response>\n${(o.stdout + o.stderr).trim()}\n</tool_response>`,
    });
    for (const d of demos) {
      const problem = train.find((p) => p.id === d.problemId)!;
      const [a, b] = parseFactors(problem.question)!;
      const code = (i: number) => JSON.parse(d.messages[i]!.content.slice(11, -12)).arguments.code;
      const fix = `print(${zeroPadded(a) ? `int('${a}')` : a} * ${zeroPadded(b) ? `int('${b}')` : b})`;
      if (d.kind === 'toolErrorFixed') {
        expect(code(2)).toBe(`print(${a} * ${b})`);
        expect(d.messages[3]!.content).toMatch(/SyntaxError: leading zeros in decimal integer literals/);
        expect(code(4)).toBe(fix);
        expect(d.messages[5]!.content).toContain(problem.answer);
      } else {
        expect(code(2)).toBe(fix);
        expect(d.messages[3]!.content).toContain(problem.answer);
      }
      expect(d.messages.at(-1)!.content).toBe(`\\boxed{${problem.answer}}`);
    }
  });
});
