/** Conversions between the engine's fp32 weights and the 16-bit formats checkpoints store. */

let halfTable: Float32Array | undefined;

/** Every fp16 bit pattern as fp32 (exact: fp16 is a subset of fp32). */
function halves(): Float32Array {
  if (halfTable) return halfTable;
  const t = new Float32Array(65536);
  const bits = new Uint32Array(t.buffer);
  for (let h = 0; h < 65536; h++) {
    const sign = (h & 0x8000) << 16;
    const exp = (h >> 10) & 0x1f;
    const frac = h & 0x3ff;
    if (exp === 0x1f) bits[h] = sign | 0x7f800000 | (frac << 13);
    else if (exp !== 0) bits[h] = sign | ((exp + 112) << 23) | (frac << 13);
    else t[h] = (sign ? -1 : 1) * frac * 2 ** -24;
  }
  halfTable = t;
  return t;
}

/** fp32 bits -> bf16 bits, round to nearest even; NaN stays NaN (quiet). */
export function bf16Bits(b: number): number {
  if ((b & 0x7f800000) === 0x7f800000 && (b & 0x7fffff) !== 0) return ((b >>> 16) | 0x40) & 0xffff;
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}

/** fp32 bits -> fp16 bits, round to nearest even, overflow to infinity, subnormals kept. */
export function f16Bits(b: number): number {
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 | (mant >>> 13) : 0);
  const e = exp - 112; // rebias 127 -> 15
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e;
    let half = m >>> shift;
    const rest = m & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rest > mid || (rest === mid && (half & 1) === 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  // A carry out of the mantissa bumps the exponent, up to infinity: that is the correct rounding.
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1) === 1)) half++;
  return sign | half;
}

/** Decodes BF16 or F16 bit patterns into fp32. */
export function decodeChunk(dtype: 'BF16' | 'F16', src: Uint16Array, dst: Float32Array): void {
  if (dtype === 'BF16') {
    const out = new Uint32Array(dst.buffer, dst.byteOffset, dst.length);
    for (let i = 0; i < src.length; i++) out[i] = (src[i] as number) << 16;
    return;
  }
  const t = halves();
  for (let i = 0; i < src.length; i++) dst[i] = t[src[i] as number] as number;
}

/** Encodes fp32 values as BF16 or F16 bit patterns into `dst` (at least src.length long). */
export function encodeChunk(dtype: 'BF16' | 'F16', src: Float32Array, dst: Uint16Array): void {
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  const f = dtype === 'BF16' ? bf16Bits : f16Bits;
  for (let i = 0; i < bits.length; i++) dst[i] = f(bits[i] as number);
}
