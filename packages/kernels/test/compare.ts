import { expect } from 'vitest';
import type { PolicyLossResult } from '../src/index.js';

/** Largest |a - b| relative to the largest |b| (a scale-aware gradient comparison). */
export function relMaxError(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let scale = 0;
  let err = 0;
  for (let i = 0; i < b.length; i++) {
    if (a[i] === b[i]) continue; // also equal infinities
    scale = Math.max(scale, Math.abs(b[i]!));
    const e = Math.abs(a[i]! - b[i]!);
    err = Number.isNaN(e) ? Number.POSITIVE_INFINITY : Math.max(err, e);
  }
  return scale === 0 ? err : err / scale;
}

/** A backend's result against the reference's: loss, gradients, logprobs and metrics. */
export function expectMatches(got: PolicyLossResult, ref: PolicyLossResult, tol = 2e-5): void {
  expect(got.loss).toBeCloseTo(ref.loss, 5);
  expect(Math.abs(got.loss - ref.loss)).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(ref.loss)));
  expect(got.dlogits.length).toBe(ref.dlogits.length);
  expect(relMaxError(got.dlogits, ref.dlogits)).toBeLessThan(tol * 10);
  expect(relMaxError(got.logprobs, ref.logprobs)).toBeLessThan(tol);
  const g = got.metrics;
  const r = ref.metrics;
  expect(g.tokens).toBe(r.tokens);
  expect(g.clipFracLow).toBeCloseTo(r.clipFracLow, 9);
  expect(g.clipFracHigh).toBeCloseTo(r.clipFracHigh, 9);
  expect(g.clipFracDual).toBeCloseTo(r.clipFracDual, 9);
  expect(g.approxKl).toBeCloseTo(r.approxKl, 5);
  expect(g.ppoKl).toBeCloseTo(r.ppoKl, 5);
  if (Number.isNaN(r.entropy)) expect(g.entropy).toBeNaN();
  else expect(Math.abs(g.entropy - r.entropy)).toBeLessThan(1e-4 * Math.max(1, Math.abs(r.entropy)));
}
