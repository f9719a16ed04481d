// Reads back a GGUF v3 file (metadata and fp32 tensors): the check of what writeGguf wrote.
import { readFileSync } from 'node:fs';
import { EngineError } from '../errors.js';
import { GGML_TYPE_F32, GgufType } from './gguf.js';

export type GgufReadValue = number | bigint | boolean | string | GgufReadValue[];

export interface GgufFile {
  version: number;
  metadata: Map<string, GgufReadValue>;
  /** Shapes row-major (reversed from ggml's `ne`), data as fp32 views of the file. */
  tensors: Map<string, { shape: number[]; type: number; data: Float32Array }>;
}

const dec = new TextDecoder();

/** Parses a GGUF v3 file; throws CHECKPOINT_INVALID naming what is malformed. */
export function readGguf(path: string): GgufFile {
  const buf = readFileSync(path);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let at = 0;
  const need = (n: number) => {
    if (at + n > buf.length)
      throw new EngineError(
        'CHECKPOINT_INVALID',
        `gguf: ${path} ends at byte ${buf.length} inside a field at ${at}`,
      );
  };
  const take = (n: number) => {
    need(n);
    at += n;
    return at - n;
  };
  const u32 = () => view.getUint32(take(4), true);
  const u64 = () => view.getBigUint64(take(8), true);
  const str = () => {
    const n = Number(u64());
    const p = take(n);
    return dec.decode(buf.subarray(p, p + n));
  };
  const scalar = (type: number): GgufReadValue => {
    const sizes: Record<number, number> = {
      0: 1,
      1: 1,
      2: 2,
      3: 2,
      4: 4,
      5: 4,
      6: 4,
      7: 1,
      10: 8,
      11: 8,
      12: 8,
    };
    if (type === GgufType.STRING) return str();
    if (type === GgufType.ARRAY) {
      const of = u32();
      const n = Number(u64());
      return Array.from({ length: n }, () => scalar(of));
    }
    const size = sizes[type];
    if (size === undefined)
      throw new EngineError('CHECKPOINT_INVALID', `gguf: ${path} has metadata type ${type}`);
    const p = take(size);
    switch (type) {
      case GgufType.UINT8:
        return view.getUint8(p);
      case GgufType.INT8:
        return view.getInt8(p);
      case GgufType.UINT16:
        return view.getUint16(p, true);
      case GgufType.INT16:
        return view.getInt16(p, true);
      case GgufType.UINT32:
        return view.getUint32(p, true);
      case GgufType.INT32:
        return view.getInt32(p, true);
      case GgufType.FLOAT32:
        return view.getFloat32(p, true);
      case GgufType.BOOL:
        return view.getUint8(p) !== 0;
      case GgufType.UINT64:
        return view.getBigUint64(p, true);
      case GgufType.INT64:
        return view.getBigInt64(p, true);
      default:
        return view.getFloat64(p, true);
    }
  };
  if (u32() !== 0x46554747)
    throw new EngineError('CHECKPOINT_INVALID', `gguf: ${path} does not start with "GGUF"`);
  const version = u32();
  const tensorCount = Number(u64());
  const kvCount = Number(u64());
  const metadata = new Map<string, GgufReadValue>();
  for (let i = 0; i < kvCount; i++) {
    const key = str();
    metadata.set(key, scalar(u32()));
  }
  const infos: { name: string; shape: number[]; type: number; offset: number }[] = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = str();
    const dims = u32();
    const ne = Array.from({ length: dims }, () => Number(u64()));
    infos.push({ name, shape: ne.reverse(), type: u32(), offset: Number(u64()) });
  }
  const alignment = Number(metadata.get('general.alignment') ?? 32);
  const dataStart = Math.ceil(at / alignment) * alignment;
  const tensors: GgufFile['tensors'] = new Map();
  for (const t of infos) {
    if (t.type !== GGML_TYPE_F32) throw new EngineError('CHECKPOINT_INVALID', `gguf: ${t.name} is not fp32`);
    const numel = t.shape.reduce((a, b) => a * b, 1);
    const begin = buf.byteOffset + dataStart + t.offset;
    if (dataStart + t.offset + 4 * numel > buf.length)
      throw new EngineError('CHECKPOINT_TRUNCATED', `gguf: ${path} ends inside tensor ${t.name}`);
    const data = new Float32Array(buf.buffer.slice(begin, begin + 4 * numel));
    tensors.set(t.name, { shape: t.shape, type: t.type, data });
  }
  return { version, metadata, tensors };
}
