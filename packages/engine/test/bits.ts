/** Indices where two float64 arrays differ in bits (any NaN equals any NaN: V8 may requiet payloads). */
export function bitMismatches(a: Float64Array, b: Float64Array, n = Math.max(a.length, b.length)): number[] {
  if (a.length < n || b.length < n) return [-1];
  const ab = new BigUint64Array(a.buffer, a.byteOffset, n);
  const bb = new BigUint64Array(b.buffer, b.byteOffset, n);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    if (ab[i] !== bb[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) out.push(i);
  }
  return out;
}

/** One double's bits: Object.is for NaN, exact bits otherwise. */
export function sameBits(x: number, y: number): boolean {
  return bitMismatches(Float64Array.of(x), Float64Array.of(y)).length === 0;
}
