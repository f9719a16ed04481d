import { z } from 'zod';
import { MathVerifyError } from './errors.js';

export const VerifyOptionsSchema = z
  .object({
    timeoutMs: z
      .number()
      .positive()
      .max(60_000)
      .describe('Budget of one verify call in ms; past it the answer counts as wrong (reason "timeout")'),
    allowSetRelation: z
      .boolean()
      .describe(
        "Accept an inequality (-2 <= x <= 7) for an interval gold ([-2, 7]); off keeps Math-Verify's anti-hack asymmetry",
      ),
    floatRounding: z
      .number()
      .int()
      .min(0)
      .max(12)
      .describe(
        "Decimal places both numbers are rounded to (half to even) when either is a written decimal; they must agree there. Math-Verify's float_rounding, default 6: gold 1/3 accepts 0.333333 but not 0.33, gold 22/7 rejects 3.14. Lower it only for golds rounded to fewer places (2: 0.33 for 1/3)",
      ),
    casFallback: z
      .boolean()
      .describe(
        'Ask @cortex-js/compute-engine when our own parser cannot read an answer (short answers only). Off by default: its calls cannot be interrupted (a \\sum to 10^6 took 20 s), so turn it on only with verifyBatchIsolated, whose worker is killed at the hard timeout',
      ),
    goldIsAnswer: z
      .boolean()
      .describe(
        'Read a gold without $, \\boxed or \\[ as the bare answer; off extracts from it like a response',
      ),
  })
  .strict();

export type VerifyOptions = z.infer<typeof VerifyOptionsSchema>;

export const DEFAULT_VERIFY_OPTIONS: VerifyOptions = {
  timeoutMs: 100,
  allowSetRelation: false,
  floatRounding: 6,
  casFallback: false,
  goldIsAnswer: true,
};

const cache = new WeakMap<object, VerifyOptions>();

/** Defaults merged with the caller's options, validated once per options object. */
export function resolveOptions(opts?: Partial<VerifyOptions>): VerifyOptions {
  if (!opts) return DEFAULT_VERIFY_OPTIONS;
  const hit = cache.get(opts);
  if (hit) return hit;
  const parsed = VerifyOptionsSchema.safeParse({ ...DEFAULT_VERIFY_OPTIONS, ...opts });
  if (!parsed.success)
    throw new MathVerifyError(
      'INVALID_OPTIONS',
      `math-verify: invalid options: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}; see VerifyOptionsSchema`,
    );
  cache.set(opts, parsed.data);
  return parsed.data;
}
