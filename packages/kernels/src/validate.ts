import { KernelError, KernelErrorCode } from './errors.js';
import type { FusedLinearInputs, GradTarget, PolicyLossInputs, TokenInputs } from './types.js';

type TypedCtor =
  | Float32ArrayConstructor
  | Int32ArrayConstructor
  | Uint8ArrayConstructor
  | Uint16ArrayConstructor;

function bad(argument: string, message: string): KernelError {
  return new KernelError(KernelErrorCode.INVALID_ARGUMENT, message, { field: argument });
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a plain Array';
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name}`;
  return typeof v;
}

/** The value must be exactly this typed array class (a contiguous buffer of that dtype) and length. */
export function expectTyped(
  value: unknown,
  ctor: TypedCtor,
  argument: string,
  length: number,
  shape: string,
): void {
  if (!(value instanceof ctor)) {
    throw bad(
      argument,
      `must be a ${ctor.name} (contiguous, ${ctor.name.replace('Array', '').toLowerCase()}); got ${describe(value)}`,
    );
  }
  if (value.length !== length) {
    throw bad(argument, `has ${value.length} elements; expected ${length} for shape ${shape}`);
  }
}

export function expectCount(value: unknown, argument: string, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw bad(argument, `must be an integer >= ${min}; got ${String(value)}`);
  }
  return value;
}

/** Checks the [T] token inputs and cuSeqlens; returns T. O(T), cheap next to the O(T V) kernel. */
export function validateTokens(inp: TokenInputs, V: number): number {
  if (!(inp.targets instanceof Int32Array))
    throw bad('targets', `must be an Int32Array; got ${describe(inp.targets)}`);
  const T = inp.targets.length;
  expectTyped(inp.oldLogprobs, Float32Array, 'oldLogprobs', T, '[T]');
  expectTyped(inp.advantages, Float32Array, 'advantages', T, '[T]');
  expectTyped(inp.lossMask, Uint8Array, 'lossMask', T, '[T]');
  if (!(inp.cuSeqlens instanceof Int32Array))
    throw bad('cuSeqlens', `must be an Int32Array; got ${describe(inp.cuSeqlens)}`);
  const cu = inp.cuSeqlens;
  if (cu.length < 1 || cu[0] !== 0 || cu[cu.length - 1] !== T) {
    throw bad(
      'cuSeqlens',
      `must start at 0 and end at T = ${T} (got ${cu[0]} .. ${cu[cu.length - 1]}, length ${cu.length})`,
    );
  }
  for (let s = 1; s < cu.length; s++) {
    if (cu[s]! < cu[s - 1]!) throw bad('cuSeqlens', `decreases at ${s} (${cu[s - 1]} then ${cu[s]})`);
  }
  for (let t = 0; t < T; t++) {
    const id = inp.targets[t]!;
    if (id < 0 || id >= V) throw bad('targets', `[${t}] is ${id}, outside the vocabulary [0, ${V})`);
    const m = inp.lossMask[t]!;
    if (m > 1) throw bad('lossMask', `[${t}] is ${m}; the mask holds 0 or 1`);
    if (!Number.isFinite(inp.oldLogprobs[t]!))
      throw bad('oldLogprobs', `[${t}] is ${inp.oldLogprobs[t]}; must be finite`);
    if (!Number.isFinite(inp.advantages[t]!))
      throw bad('advantages', `[${t}] is ${inp.advantages[t]}; must be finite`);
  }
  return T;
}

/** Checks the logits variant's inputs and the gradient target; returns [T, V]. */
export function validatePolicyLossInputs(
  inp: PolicyLossInputs,
  out: GradTarget,
  backend: string,
): [number, number] {
  if (inp === null || typeof inp !== 'object') throw bad('inputs', 'must be an object');
  const V = expectCount(inp.vocabSize, 'vocabSize', 1);
  const T = validateTokens(inp, V);
  if (inp.logits instanceof Uint16Array) {
    if (!['cuda', 'hip', 'reference'].includes(backend)) {
      throw bad(
        'logits',
        `are bf16 (Uint16Array), which the ${backend} backend does not take: use cuda, hip or reference, or bf16ToFloat32()`,
      );
    }
    expectTyped(inp.logits, Uint16Array, 'logits', T * V, `[T=${T}, V=${V}]`);
    if (out.inPlace)
      throw bad('inPlace', 'needs fp32 logits: bf16 logits cannot hold fp32 dlogits; pass gradOut instead');
  } else {
    expectTyped(inp.logits, Float32Array, 'logits', T * V, `[T=${T}, V=${V}]`);
  }
  if (out.gradOut !== undefined) {
    expectTyped(out.gradOut, Float32Array, 'gradOut', T * V, `[T=${T}, V=${V}]`);
    if (out.inPlace) throw bad('gradOut', 'and inPlace are exclusive: pick one place for dlogits');
  }
  return [T, V];
}

/** Checks the fused-linear inputs; returns [T, H, V]. */
export function validateFusedLinearInputs(inp: FusedLinearInputs): [number, number, number] {
  if (inp === null || typeof inp !== 'object') throw bad('inputs', 'must be an object');
  const V = expectCount(inp.vocabSize, 'vocabSize', 1);
  const H = expectCount(inp.hiddenSize, 'hiddenSize', 1);
  const T = validateTokens(inp, V);
  expectTyped(inp.hidden, Float32Array, 'hidden', T * H, `[T=${T}, H=${H}]`);
  expectTyped(inp.weight, Float32Array, 'weight', V * H, `[V=${V}, H=${H}]`);
  return [T, H, V];
}

/** O(T V) scan for NaN, +inf and all -inf rows, for backends that cannot flag them themselves (WebGPU). */
export function checkLogitsFinite(logits: Float32Array, V: number, argument = 'logits'): void {
  for (let o = 0; o < logits.length; o += V) {
    let finite = 0;
    for (let j = 0; j < V; j++) {
      const x = logits[o + j]!;
      if (Number.isNaN(x) || x === Number.POSITIVE_INFINITY) {
        throw bad(argument, `has ${x} at row ${o / V}, column ${j}: logits must be finite or -inf`);
      }
      if (x !== Number.NEGATIVE_INFINITY) finite++;
    }
    if (finite === 0) throw bad(argument, `row ${o / V} is all -inf: no token has any probability`);
  }
}
