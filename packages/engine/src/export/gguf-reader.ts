// Reads back a GGUF v3 file (metadata and fp32 tensors): the check of what writeGguf wrote.
import { readFileSync } from 'node:fs';
import { EngineError } from '../errors.js';
import { GGML_TYPE_F32, GgufType } from './gguf.js';

export type GgufReadValue = number | bigint | boolean | string | GgufReadValue[];

export interface GgufFile {
  version: number;
  metadata: Map<string, GgufReadValue>;
  /** Shapes row-major (reversed from ggml's `ne`), data as fp32 copies. */
  tensors: Map<string, { shape: number[]; type: number; data: Float32Array }>;
}

const dec = new TextDecoder();
// Bytes of each fixed-size metadata type (gguf.md `gguf_metadata_value_type`).
const SIZES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

/** Little-endian reads from the front of a file's bytes, each bounds-checked. */
class Cursor {
  at = 0;
  private readonly view: DataView;
  constructor(
    private readonly buf: Buffer,
    private readonly path: string,
  ) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }
  take(n: number): number {
    if (this.at + n > this.buf.length) {
      throw new EngineError(
        'CHECKPOINT_INVALID',
        `gguf: ${this.path} ends at byte ${this.buf.length} inside a field at ${this.at}`,
      );
    }
    this.at += n;
    return this.at - n;
  }
  u32 = () => this.view.getUint32(this.take(4), true);
  u64 = () => this.view.getBigUint64(this.take(8), true);
  str(): string {
    const n = Number(this.u64());
    const p = this.take(n);
    return dec.decode(this.buf.subarray(p, p + n));
  }
  value(type: number): GgufReadValue {
    if (type === GgufType.STRING) return this.str();
    if (type === GgufType.ARRAY) {
      const of = this.u32();
      const n = Number(this.u64());
      return Array.from({ length: n }, () => this.value(of));
    }
    const size = SIZES[type];
    if (size === undefined)
      throw new EngineError('CHECKPOINT_INVALID', `gguf: ${this.path} has metadata type ${type}`);
    const p = this.take(size);
    const v = this.view;
    switch (type) {
      case GgufType.UINT8:
        return v.getUint8(p);
      case GgufType.INT8:
        return v.getInt8(p);
      case GgufType.UINT16:
        return v.getUint16(p, true);
      case GgufType.INT16:
        return v.getInt16(p, true);
      case GgufType.UINT32:
        return v.getUint32(p, true);
      case GgufType.INT32:
        return v.getInt32(p, true);
      case GgufType.FLOAT32:
        return v.getFloat32(p, true);
      case GgufType.BOOL:
        return v.getUint8(p) !== 0;
      case GgufType.UINT64:
        return v.getBigUint64(p, true);
      case GgufType.INT64:
        return v.getBigInt64(p, true);
      default:
        return v.getFloat64(p, true);
    }
  }
}

/** Parses a GGUF v3 file; throws CHECKPOINT_INVALID / CHECKPOINT_TRUNCATED naming what is malformed. */
export function readGguf(path: string): GgufFile {
  const buf = readFileSync(path);
  const c = new Cursor(buf, path);
  if (c.u32() !== 0x46554747)
    throw new EngineError('CHECKPOINT_INVALID', `gguf: ${path} does not start with "GGUF"`);
  const version = c.u32();
  const tensorCount = Number(c.u64());
  const kvCount = Number(c.u64());
  const metadata = new Map<string, GgufReadValue>();
  for (let i = 0; i < kvCount; i++) {
    const key = c.str();
    metadata.set(key, c.value(c.u32()));
  }
  const infos = Array.from({ length: tensorCount }, () => {
    const name = c.str();
    const ne = Array.from({ length: c.u32() }, () => Number(c.u64()));
    return { name, shape: ne.reverse(), type: c.u32(), offset: Number(c.u64()) };
  });
  const alignment = Number(metadata.get('general.alignment') ?? 32);
  const dataStart = Math.ceil(c.at / alignment) * alignment;
  const tensors: GgufFile['tensors'] = new Map();
  for (const t of infos) {
    if (t.type !== GGML_TYPE_F32) throw new EngineError('CHECKPOINT_INVALID', `gguf: ${t.name} is not fp32`);
    const bytes = 4 * t.shape.reduce((a, b) => a * b, 1);
    if (dataStart + t.offset + bytes > buf.length)
      throw new EngineError('CHECKPOINT_TRUNCATED', `gguf: ${path} ends inside tensor ${t.name}`);
    const begin = buf.byteOffset + dataStart + t.offset;
    tensors.set(t.name, {
      shape: t.shape,
      type: t.type,
      data: new Float32Array(buf.buffer.slice(begin, begin + bytes)),
    });
  }
  return { version, metadata, tensors };
}
