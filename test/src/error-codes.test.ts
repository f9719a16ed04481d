import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EngineError, EngineErrorCode } from '@agentrl/engine';
import { EngineServerError, EngineServerErrorCode } from '@agentrl/engine-server';
import { ExecutorError, ExecutorErrorCode } from '@agentrl/executor';
import { GrpoError, GrpoErrorCode } from '@agentrl/grpo';
import { KernelError, KernelErrorCode } from '@agentrl/kernels';
import { MathVerifyError, MathVerifyErrorCode } from '@agentrl/math-verify';
import { DistError, DistErrorCode } from '@agentrl/parallel';
import { AgentrlError, describeErrorCode, isAgentrlError } from '@agentrl/protocol';
import { RolloutErrorCode } from '@agentrl/rollout';
import { SchedulerErrorCode } from '@agentrl/scheduler';
import { TrainerError, TrainerErrorCode } from 'agentrl';
import { describe, expect, it } from 'vitest';

type Ctor = new (code: never, message: string) => Error & { code: string };

// Every package but rollout (which converts its own), with the prefix its codes carry.
const PACKAGES: [string, Readonly<Record<string, string>>, Ctor][] = [
  ['ENGINE', EngineErrorCode, EngineError as unknown as Ctor],
  ['ESERVER', EngineServerErrorCode, EngineServerError as unknown as Ctor],
  ['EXECUTOR', ExecutorErrorCode, ExecutorError as unknown as Ctor],
  ['GRPO', GrpoErrorCode, GrpoError as unknown as Ctor],
  ['KERNELS', KernelErrorCode, KernelError as unknown as Ctor],
  ['MATH_VERIFY', MathVerifyErrorCode, MathVerifyError as unknown as Ctor],
  ['DIST', DistErrorCode, DistError as unknown as Ctor],
  ['TRAINER', TrainerErrorCode, TrainerError as unknown as Ctor],
];

describe('error codes across packages', () => {
  it('carry their package prefix, are described, and never collide', () => {
    const seen = new Map<string, string>();
    const tables: [string, Readonly<Record<string, string>>][] = [
      ...PACKAGES.map(([prefix, table]) => [prefix, table] as [string, Readonly<Record<string, string>>]),
      ['ROLLOUT', RolloutErrorCode],
      ['SCHEDULER', SchedulerErrorCode],
    ];
    for (const [prefix, table] of tables) {
      for (const [key, code] of Object.entries(table)) {
        expect(code).toBe(`${prefix}_${key}`);
        expect(describeErrorCode(code), code).toBeTruthy();
        expect(seen.get(code), `${code} is defined twice`).toBeUndefined();
        seen.set(code, prefix);
      }
    }
  });

  it.each(PACKAGES)(
    '%s: the error class is an AgentrlError with its name and the full code',
    (prefix, table, Err) => {
      const key = Object.keys(table)[0]!;
      for (const given of [key, table[key]!]) {
        const err = new Err(given as never, 'what went wrong; what to do');
        expect(err).toBeInstanceOf(AgentrlError);
        expect(err.code).toBe(`${prefix}_${key}`);
        expect(err.name).toBe(Err.name);
        expect(isAgentrlError(err, prefix)).toBe(true);
        expect(err.message).toMatch(/what went wrong; what to do$/);
      }
      expect(() => new Err('NO_SUCH_CODE' as never, 'x')).toThrow(/neither a key nor a code/);
    },
  );

  it('knows every code the native addon throws across the boundary (native/src)', () => {
    const root = join(import.meta.dirname, '../../native/src');
    const thrown = new Set<string>();
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(dir, e.name));
        else if (/\.(cc|h|cu|cpp)$/.test(e.name))
          for (const m of readFileSync(join(dir, e.name), 'utf8').matchAll(
            /"((?:ENGINE|KERNELS|DIST)_[A-Z_]+)"/g,
          ))
            thrown.add(m[1]!);
      }
    };
    walk(root);
    expect(thrown.size).toBeGreaterThanOrEqual(6);
    const known = new Set(PACKAGES.flatMap(([, table]) => Object.values(table)));
    for (const code of thrown) expect(known.has(code), `${code} thrown by native/src`).toBe(true);
  });
});
