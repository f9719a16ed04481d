import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExecutorError } from './errors.js';
import { CALL_RANGES, checkRequest } from './requests.js';

/** True when UTF-8 carries the text unchanged (no lone surrogate). */
const utf8Safe = (s: string) => Buffer.from(s, 'utf8').toString('utf8') === s;

describe('checkRequest: the wire contract of one call', () => {
  it('refuses anything malformed with INVALID_REQUEST only, and what it accepts UTF-8 carries intact', () => {
    const text = fc.string({ unit: 'binary', maxLength: 30 });
    const call = fc.record(
      {
        code: fc.oneof(text, fc.anything()),
        stdin: fc.oneof(text, fc.anything()),
        timeoutMs: fc.oneof(fc.integer(), fc.double(), fc.anything()),
        memoryMb: fc.oneof(fc.integer({ min: -10, max: 100_000 }), fc.anything()),
        maxOutputBytes: fc.oneof(fc.integer(), fc.anything()),
        truncate: fc.oneof(fc.constantFrom('middle', 'head', 'tail'), fc.anything()),
        lastExpression: fc.oneof(fc.boolean(), fc.anything()),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.oneof(call, fc.anything()), (req) => {
        let accepted = true;
        try {
          checkRequest(req);
        } catch (e) {
          accepted = false;
          expect(e).toBeInstanceOf(ExecutorError);
          expect((e as ExecutorError).code).toBe('EXECUTOR_INVALID_REQUEST');
        }
        if (!accepted) return;
        const r = req as Record<string, unknown>;
        expect(typeof r.code).toBe('string');
        expect(utf8Safe(r.code as string) && utf8Safe((r.stdin as string | undefined) ?? '')).toBe(true);
        for (const [field, [min, max]] of Object.entries(CALL_RANGES)) {
          const v = r[field];
          if (v !== undefined)
            expect(Number.isInteger(v) && (v as number) >= min && (v as number) <= max).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('names a lone surrogate and where it is', () => {
    expect(() => checkRequest({ code: 'print(1)', stdin: 'ab\udc00' })).toThrow(
      'stdin holds a lone UTF-16 surrogate at index 2; send well-formed text',
    );
    expect(() => checkRequest({ code: 'x = "\ud83d\ude00"' })).not.toThrow(); // a pair is fine
  });
});
