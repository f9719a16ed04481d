import { EngineError } from './errors.js';

/** The dtypes this engine reads; it writes F32 and BF16. */
export type SafetensorsDtype = 'F32' | 'BF16' | 'F16';
const BYTES: Record<SafetensorsDtype, number> = { F32: 4, BF16: 2, F16: 2 };

export interface TensorEntry {
  dtype: SafetensorsDtype;
  shape: number[];
  /** the raw little-endian bytes */
  data: Uint8Array;
}

export interface SafetensorsFile {
  tensors: Map<string, TensorEntry>;
  metadata: Record<string, string>;
}

/**
 * Parses a .safetensors file (8-byte little-endian header length, JSON header, data), checking every
 * offset against the file size and every byte count against its dtype and shape. `what` names the
 * file in error messages.
 */
export function parseSafetensors(bytes: Uint8Array, what: string): SafetensorsFile {
  if (bytes.length < 8)
    throw new EngineError(
      'CHECKPOINT_TRUNCATED',
      `${what} is ${bytes.length} bytes, too short to be safetensors`,
    );
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen = Number(view.getBigUint64(0, true));
  if (8 + headerLen > bytes.length) {
    throw new EngineError(
      'CHECKPOINT_TRUNCATED',
      `${what}: header says ${headerLen} bytes but the file has ${bytes.length}; the file is truncated or not safetensors`,
    );
  }
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLen))) as Record<
      string,
      unknown
    >;
  } catch (err) {
    throw new EngineError('CHECKPOINT_INVALID', `${what}: the header is not valid JSON`, { cause: err });
  }
  const data = bytes.subarray(8 + headerLen);
  const tensors = new Map<string, TensorEntry>();
  let metadata: Record<string, string> = {};
  for (const [name, raw] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = (raw ?? {}) as Record<string, string>;
      continue;
    }
    const info = raw as { dtype?: string; shape?: number[]; data_offsets?: [number, number] };
    const dtype = info.dtype as SafetensorsDtype;
    if (!(dtype in BYTES)) {
      throw new EngineError(
        'CHECKPOINT_INVALID',
        `${what}: tensor ${name} has dtype ${String(info.dtype)}; supported: F32, BF16, F16`,
      );
    }
    const shape = info.shape ?? [];
    const [begin, end] = info.data_offsets ?? [-1, -1];
    const numel = shape.reduce((a, b) => a * b, 1);
    if (!(begin >= 0 && end >= begin) || end - begin !== numel * BYTES[dtype]) {
      throw new EngineError(
        'CHECKPOINT_INVALID',
        `${what}: tensor ${name} [${shape.join(', ')}] ${dtype} has data_offsets [${begin}, ${end}], not ${numel * BYTES[dtype]} bytes`,
      );
    }
    if (end > data.length) {
      throw new EngineError(
        'CHECKPOINT_TRUNCATED',
        `${what}: tensor ${name} ends at byte ${end} of the data section but it has only ${data.length} bytes; the file is truncated`,
      );
    }
    tensors.set(name, { dtype, shape, data: data.subarray(begin, end) });
  }
  return { tensors, metadata };
}

/** Serialises tensors in name order with an 8-byte aligned header: the same input gives the same bytes. */
export function serializeSafetensors(
  tensors: Map<string, TensorEntry>,
  metadata: Record<string, string> = {},
): Uint8Array {
  const names = [...tensors.keys()].sort();
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const name of names) {
    const t = tensors.get(name) as TensorEntry;
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.data.length] };
    offset += t.data.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((json.length + 8) % 8)) % 8);
  const head = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + head.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  let at = 8 + head.length;
  for (const name of names) {
    const t = tensors.get(name) as TensorEntry;
    out.set(t.data, at);
    at += t.data.length;
  }
  return out;
}

/** fp32 -> bf16 with round-to-nearest-even (NaN stays NaN). */
export function f32ToBf16(src: Float32Array): Uint8Array {
  const u32 = new Uint32Array(src.buffer, src.byteOffset, src.length);
  const out = new Uint16Array(src.length);
  for (let i = 0; i < src.length; i++) {
    const b = u32[i] ?? 0;
    if ((b & 0x7f800000) === 0x7f800000 && (b & 0x7fffff) !== 0) out[i] = (b >>> 16) | 0x40;
    else out[i] = ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
  }
  return new Uint8Array(out.buffer);
}

/** Decodes F32 / BF16 / F16 bytes into `dst` (fp32). */
export function decodeToF32(entry: TensorEntry, dst: Float32Array): void {
  const { data, dtype } = entry;
  const aligned = data.byteOffset % 4 === 0 ? data : data.slice();
  if (dtype === 'F32') {
    dst.set(new Float32Array(aligned.buffer, aligned.byteOffset, dst.length));
    return;
  }
  const u16 = new Uint16Array(aligned.buffer, aligned.byteOffset, dst.length);
  if (dtype === 'BF16') {
    const u32 = new Uint32Array(dst.buffer, dst.byteOffset, dst.length);
    for (let i = 0; i < dst.length; i++) u32[i] = (u16[i] ?? 0) << 16;
    return;
  }
  for (let i = 0; i < dst.length; i++) dst[i] = halfToFloat(u16[i] ?? 0);
}

function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}
