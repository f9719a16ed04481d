import { loadNative } from '@agentrl/native';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type Backend,
  disposeWebGpu,
  fusedLinearPolicyLoss,
  KernelError,
  KernelErrorCode,
  listBackends,
  type PolicyLossInputs,
  type PolicyLossOptions,
  policyLoss,
} from '../src/index.js';
import { makeFusedInputs, makeInputs } from './fixtures.js';

afterAll(() => disposeWebGpu());
const backends = await listBackends();

async function expectKernelError(p: () => unknown, code: string, argument: RegExp): Promise<void> {
  let caught: unknown;
  try {
    await p();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(KernelError);
  expect((caught as KernelError).code).toBe(code);
  expect((caught as KernelError).message).toMatch(argument);
}

const good = () => makeInputs({ seqLens: [3, 4], V: 20, seed: 3 });
type Mutate = (i: PolicyLossInputs) => unknown;
const BAD_TS: [string, Mutate, RegExp][] = [
  [
    'logits of the wrong length',
    (i) => ({ ...i, logits: i.logits.subarray(1) }),
    /^kernels: logits has 139 elements; expected 140/,
  ],
  [
    'logits as a plain Array (not a contiguous typed buffer)',
    (i) => ({ ...i, logits: Array.from(i.logits) }),
    /logits must be a Float32Array.*plain Array/,
  ],
  [
    'logits as Float64Array (wrong dtype)',
    (i) => ({ ...i, logits: Float64Array.from(i.logits) }),
    /logits must be a Float32Array.*Float64Array/,
  ],
  [
    'targets as Float32Array',
    (i) => ({ ...i, targets: Float32Array.from(i.targets) }),
    /targets must be an Int32Array/,
  ],
  [
    'target id out of range (V)',
    (i) => ({ ...i, targets: i.targets.map((t, k) => (k === 2 ? 20 : t)) }),
    /targets \[2\] is 20, outside the vocabulary \[0, 20\)/,
  ],
  [
    'target id negative',
    (i) => ({ ...i, targets: i.targets.map((t, k) => (k === 0 ? -1 : t)) }),
    /targets \[0\] is -1/,
  ],
  [
    'NaN advantage',
    (i) => ({ ...i, advantages: i.advantages.map((a, k) => (k === 5 ? Number.NaN : a)) }),
    /advantages \[5\] is NaN/,
  ],
  [
    'inf old logprob',
    (i) => ({ ...i, oldLogprobs: i.oldLogprobs.map((a, k) => (k === 1 ? Number.NEGATIVE_INFINITY : a)) }),
    /oldLogprobs \[1\] is -Infinity/,
  ],
  [
    'lossMask as Float32Array',
    (i) => ({ ...i, lossMask: Float32Array.from(i.lossMask) }),
    /lossMask must be a Uint8Array/,
  ],
  [
    'lossMask value 2',
    (i) => ({ ...i, lossMask: i.lossMask.map((m, k) => (k === 3 ? 2 : m)) }),
    /lossMask \[3\] is 2/,
  ],
  [
    'cuSeqlens not ending at T',
    (i) => ({ ...i, cuSeqlens: Int32Array.from([0, 3, 6]) }),
    /cuSeqlens must start at 0 and end at T = 7/,
  ],
  [
    'cuSeqlens decreasing',
    (i) => ({ ...i, cuSeqlens: Int32Array.from([0, 5, 4, 7]) }),
    /cuSeqlens decreases at 2/,
  ],
  [
    'targets and advantages disagree on T',
    (i) => ({ ...i, advantages: i.advantages.subarray(0, 6) }),
    /advantages has 6 elements; expected 7/,
  ],
  ['vocabSize 0', (i) => ({ ...i, vocabSize: 0 }), /vocabSize must be an integer >= 1/],
];

const runnableNative = backends
  .filter((b) => b.runnable && b.name !== 'webgpu')
  .map((b) => b.name as Backend);

describe.each([...runnableNative, 'webgpu'] as Backend[])(
  'bad inputs on %s are rejected in TS, naming the argument',
  (backend) => {
    it.each(BAD_TS)('%s', async (_name, mutate, message) => {
      await expectKernelError(
        () => policyLoss(mutate(good()) as PolicyLossInputs, { backend }),
        KernelErrorCode.INVALID_ARGUMENT,
        message,
      );
    });

    it.each([
      ['NaN', Number.NaN, /logits.*NaN/],
      ['+inf', Number.POSITIVE_INFINITY, /logits.*(\+inf|Infinity)/],
    ] as const)(
      'a %s logit is an error naming logits (found in the kernel pass itself)',
      async (_n, value, message) => {
        const inp = good();
        inp.logits[47] = value;
        await expectKernelError(
          () => policyLoss(inp, { backend }),
          KernelErrorCode.INVALID_ARGUMENT,
          message,
        );
      },
    );

    it('an all -inf row is an error naming logits', async () => {
      const inp = good();
      inp.logits.fill(Number.NEGATIVE_INFINITY, 20, 40);
      await expectKernelError(
        () => policyLoss(inp, { backend }),
        KernelErrorCode.INVALID_ARGUMENT,
        /logits.*(row 1|all -inf)/,
      );
    });
  },
);

describe('bad options', () => {
  const cases: [string, PolicyLossOptions, string, RegExp][] = [
    ['temperature 0', { temperature: 0 }, KernelErrorCode.INVALID_CONFIG, /config.temperature/],
    ['dual clip below 1', { dualClip: 0.5 }, KernelErrorCode.INVALID_CONFIG, /config.dualClip/],
    [
      'sum-norm without horizon',
      { aggregation: 'seq-mean-token-sum-norm' },
      KernelErrorCode.INVALID_CONFIG,
      /config.horizon/,
    ],
    [
      'unknown backend',
      { backend: 'tpu' as Backend },
      KernelErrorCode.INVALID_CONFIG,
      /options.backend is "tpu"/,
    ],
    [
      'gradOut of the wrong size',
      { gradOut: new Float32Array(3) },
      KernelErrorCode.INVALID_ARGUMENT,
      /gradOut has 3 elements/,
    ],
    [
      'gradOut and inPlace together',
      { gradOut: new Float32Array(140), inPlace: true },
      KernelErrorCode.INVALID_ARGUMENT,
      /gradOut and inPlace/,
    ],
  ];
  it.each(cases)('%s', async (_n, options, code, message) => {
    await expectKernelError(() => policyLoss(good(), options), code, message);
  });

  it.each(['cuda', 'hip'] as const)(
    '%s without a runnable device is BACKEND_UNAVAILABLE, saying why',
    async (name) => {
      const b = backends.find((x) => x.name === name)!;
      if (b.runnable) return; // a GPU machine runs it in backends.test.ts instead
      await expectKernelError(
        () => policyLoss(good(), { backend: name }),
        KernelErrorCode.BACKEND_UNAVAILABLE,
        new RegExp(`${name}|kernels`),
      );
    },
  );

  it('fused-linear: hidden of the wrong size names hidden', () => {
    const inp = makeFusedInputs({ seqLens: [2], V: 9, H: 4, seed: 1 });
    expect(() => fusedLinearPolicyLoss({ ...inp, hidden: new Float32Array(7) })).toThrow(
      /hidden has 7 elements; expected 8/,
    );
    expect(() => fusedLinearPolicyLoss({ ...inp, weight: new Float32Array(7) })).toThrow(
      /weight has 7 elements; expected 36/,
    );
  });
});

describe('the native entry points themselves never crash the process', () => {
  const k = loadNative().kernels as Record<string, (a: unknown) => unknown>;
  const inp = good();
  const valid = {
    backend: 'cpu',
    bf16: false,
    ...inp,
    dlogits: new Float32Array(140),
    logp: new Float32Array(7),
    entropy: undefined,
    config: { temperature: 1 },
  };
  const cases: [string, unknown, RegExp][] = [
    ['no argument', undefined, /expected one argument object/],
    ['a number', 42, /expected one argument object/],
    ['missing logits', { ...valid, logits: undefined }, /logits must be a typed array/],
    ['logits of the wrong dtype', { ...valid, logits: new Int32Array(140) }, /logits has the wrong dtype/],
    ['short dlogits', { ...valid, dlogits: new Float32Array(10) }, /dlogits has 10 elements/],
    [
      'target out of range',
      { ...valid, targets: Int32Array.from(inp.targets).fill(99) },
      /targets\[0\] is out of range/,
    ],
    [
      'bad cuSeqlens',
      { ...valid, cuSeqlens: Int32Array.from([0, 2]) },
      /cuSeqlens must start at 0 and end at T/,
    ],
    ['unknown backend', { ...valid, backend: 'tpu' }, /backend must be cpu, cuda or hip/],
    ['temperature 0', { ...valid, config: { temperature: 0 } }, /temperature/],
    // numbers are checked before any cast: NaN to int64 is undefined behaviour, an enum past its range picks nothing
    ['NaN tokenCount', { ...valid, config: { tokenCount: Number.NaN } }, /tokenCount must be finite/],
    [
      'Infinity seqCount',
      { ...valid, config: { seqCount: Number.POSITIVE_INFINITY } },
      /seqCount must be finite/,
    ],
    ['aggregation 7', { ...valid, config: { aggregation: 7 } }, /aggregation must be an integer in \[0, 3\]/],
    [
      'aggregation -1',
      { ...valid, config: { aggregation: -1 } },
      /aggregation must be an integer in \[0, 3\]/,
    ],
    ['fractional aggregation', { ...valid, config: { aggregation: 1.5 } }, /aggregation must be an integer/],
    ['NaN clipLow', { ...valid, config: { clipLow: Number.NaN } }, /clipLow must be finite/],
    ['fractional vocabSize', { ...valid, vocabSize: 20.5 }, /vocabSize must be an integer/],
    ['NaN vocabSize', { ...valid, vocabSize: Number.NaN }, /vocabSize must be finite/],
    [
      'bf16 on cpu',
      { ...valid, bf16: true, logits: new Uint16Array(140) },
      /bf16 is supported on the cuda and hip backends only/,
    ],
  ];
  it.each(cases)('%s: a JS error with a code', (_n, arg, message) => {
    let caught: (Error & { code?: string }) | undefined;
    try {
      k.policyLoss!(arg);
    } catch (err) {
      caught = err as Error & { code?: string };
    }
    expect(caught).toBeInstanceOf(Error);
    expect(caught!.message).toMatch(message);
    expect(caught!.code).toBe('KERNELS_INVALID_ARGUMENT');
  });
});

describe('fuzzing the native boundary', () => {
  const k = loadNative().kernels as Record<string, (a: unknown) => unknown>;
  const typed = fc.oneof(
    fc.constant(undefined),
    fc.integer({ min: 0, max: 40 }).map((n) => new Float32Array(n).fill(0.5)),
    fc.integer({ min: 0, max: 40 }).map((n) => new Int32Array(n).fill(3)),
    fc.integer({ min: 0, max: 40 }).map((n) => new Uint8Array(n).fill(1)),
    fc.integer({ min: 0, max: 40 }).map((n) => new Uint16Array(n)),
    fc.constant([1, 2, 3]),
    fc.constant('x'),
  );
  it('random argument objects give a result or a JS error with a code, never a crash', () => {
    fc.assert(
      fc.property(
        fc.record({
          backend: fc.constantFrom('cpu', 'cuda', 'hip', 'tpu', 7),
          bf16: fc.boolean(),
          vocabSize: fc.oneof(fc.integer({ min: -2, max: 8 }), fc.constant(Number.NaN), fc.constant('4')),
          hiddenSize: fc.integer({ min: -1, max: 4 }),
          logits: typed,
          hidden: typed,
          weight: typed,
          targets: typed,
          oldLogprobs: typed,
          advantages: typed,
          lossMask: typed,
          cuSeqlens: fc.oneof(typed, fc.constant(Int32Array.from([0, 2, 5]))),
          dlogits: typed,
          dHidden: typed,
          dWeight: typed,
          logp: typed,
          entropy: typed,
          config: fc.oneof(
            fc.constant({}),
            fc.constant({ temperature: 0.5, entropy: 1 }),
            fc.constant(null),
            fc.constant({ aggregation: 3 }),
          ),
        }),
        fc.constantFrom('policyLoss', 'fusedLinear'),
        (args, fn) => {
          try {
            k[fn]!(args);
          } catch (err) {
            expect(err).toBeInstanceOf(Error);
            expect((err as { code?: string }).code).toMatch(/^KERNELS_/);
          }
        },
      ),
      { numRuns: 400, seed: 7 },
    );
  });
});
