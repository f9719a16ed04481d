/** bf16 is the top half of an fp32: widening is a shift. */
export function bf16ToFloat32(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  const u = new Uint32Array(out.buffer);
  for (let i = 0; i < bits.length; i++) u[i] = bits[i]! << 16;
  return out;
}

/** fp32 to bf16 bit patterns, rounding to nearest even (NaN stays NaN). */
export function float32ToBf16(values: Float32Array): Uint16Array {
  const out = new Uint16Array(values.length);
  const u = new Uint32Array(values.buffer, values.byteOffset, values.length);
  for (let i = 0; i < values.length; i++) {
    const x = u[i]!;
    if ((x & 0x7f800000) === 0x7f800000 && (x & 0x7fffff) !== 0) {
      out[i] = (x >>> 16) | 0x40;
      continue;
    }
    out[i] = (x + 0x7fff + ((x >>> 16) & 1)) >>> 16;
  }
  return out;
}
