import { type FileHandle, open } from 'node:fs/promises';
import { decodeChunk, encodeChunk } from './dtypes.js';
import { EngineError } from './errors.js';

/** The dtypes this engine reads and writes. */
export type SafetensorsDtype = 'F32' | 'BF16' | 'F16';
const BYTES: Record<SafetensorsDtype, number> = { F32: 4, BF16: 2, F16: 2 };
/** safetensors' own limit on the JSON header. */
const MAX_HEADER = 100_000_000;
/** Bytes moved per read or write call: files of any size stream through this much memory. */
const CHUNK = 16 << 20;

export interface TensorHeader {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** absolute byte offset of the tensor's data in the file */
  begin: number;
  byteLength: number;
}

/** An open .safetensors file: its header, and positioned reads of one tensor at a time. */
export interface SafetensorsReader {
  readonly path: string;
  readonly tensors: ReadonlyMap<string, TensorHeader>;
  readonly metadata: Record<string, string>;
  /** Decodes one tensor into `dst` (fp32), reading at most a few MiB at a time. */
  readInto(tensor: TensorHeader, dst: Float32Array): Promise<void>;
  close(): Promise<void>;
}

/** A tensor to write: fp32 values, stored on disk as `dtype`. */
export interface TensorSource {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  data: Float32Array;
}

/** Bytes of `numel` elements of `dtype`. */
export function tensorBytes(dtype: SafetensorsDtype, numel: number): number {
  return BYTES[dtype] * numel;
}

/**
 * Opens a .safetensors file (8-byte little-endian header length, JSON header, data) and checks every
 * tensor's offsets against the file size and its byte count against dtype and shape, without reading
 * the data. Files over 2 GiB are fine: nothing is read into one buffer.
 */
export async function openSafetensors(path: string): Promise<SafetensorsReader> {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    const header = await readHeader(fh, path, size);
    return {
      path,
      ...header,
      readInto: (t, dst) => readTensor(fh, path, t, dst),
      close: () => fh.close(),
    };
  } catch (err) {
    await fh.close();
    throw err;
  }
}

async function readHeader(
  fh: FileHandle,
  path: string,
  size: number,
): Promise<{ tensors: Map<string, TensorHeader>; metadata: Record<string, string> }> {
  if (size < 8) {
    throw new EngineError('CHECKPOINT_TRUNCATED', `${path} is ${size} bytes, too short to be safetensors`);
  }
  const lenBytes = Buffer.alloc(8);
  await readFully(fh, lenBytes, 0, path);
  const headerLen = Number(lenBytes.readBigUInt64LE(0));
  if (headerLen > MAX_HEADER || 8 + headerLen > size) {
    throw new EngineError(
      'CHECKPOINT_TRUNCATED',
      `${path}: header says ${headerLen} bytes but the file has ${size}; the file is truncated or not safetensors`,
    );
  }
  const headerBytes = Buffer.alloc(headerLen);
  await readFully(fh, headerBytes, 8, path);
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(headerBytes.toString('utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new EngineError('CHECKPOINT_INVALID', `${path}: the header is not valid JSON`, { cause: err });
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) {
    throw new EngineError('CHECKPOINT_INVALID', `${path}: the header is not a JSON object`);
  }
  const dataStart = 8 + headerLen;
  const dataLen = size - dataStart;
  const tensors = new Map<string, TensorHeader>();
  let metadata: Record<string, string> = {};
  for (const [name, raw] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = (raw ?? {}) as Record<string, string>;
      continue;
    }
    const info = (raw ?? {}) as { dtype?: string; shape?: number[]; data_offsets?: [number, number] };
    const dtype = info.dtype as SafetensorsDtype;
    if (!(dtype in BYTES)) {
      throw new EngineError(
        'CHECKPOINT_INVALID',
        `${path}: tensor ${name} has dtype ${String(info.dtype)}; supported: F32, BF16, F16`,
      );
    }
    const shape = Array.isArray(info.shape) ? info.shape : [];
    const [begin, end] = Array.isArray(info.data_offsets) ? info.data_offsets : [-1, -1];
    const numel = shape.reduce((a, b) => a * b, 1);
    if (
      !shape.every((s) => Number.isInteger(s) && s >= 0) ||
      !(Number.isInteger(begin) && Number.isInteger(end) && begin >= 0 && end >= begin) ||
      end - begin !== numel * BYTES[dtype]
    ) {
      throw new EngineError(
        'CHECKPOINT_INVALID',
        `${path}: tensor ${name} [${shape.join(', ')}] ${dtype} has data_offsets [${begin}, ${end}], not ${numel * BYTES[dtype]} bytes`,
      );
    }
    if (end > dataLen) {
      throw new EngineError(
        'CHECKPOINT_TRUNCATED',
        `${path}: tensor ${name} ends at byte ${end} of the data section but it has only ${dataLen} bytes; the file is truncated`,
      );
    }
    tensors.set(name, { name, dtype, shape, begin: dataStart + begin, byteLength: end - begin });
  }
  return { tensors, metadata };
}

async function readFully(fh: FileHandle, into: Uint8Array, position: number, path: string): Promise<void> {
  let done = 0;
  while (done < into.length) {
    const { bytesRead } = await fh.read(into, done, into.length - done, position + done);
    if (bytesRead === 0) {
      throw new EngineError(
        'CHECKPOINT_TRUNCATED',
        `${path}: ended at byte ${position + done} while reading; the file is truncated`,
      );
    }
    done += bytesRead;
  }
}

async function readTensor(fh: FileHandle, path: string, t: TensorHeader, dst: Float32Array): Promise<void> {
  const numel = t.byteLength / BYTES[t.dtype];
  if (dst.length !== numel) {
    throw new EngineError(
      'CHECKPOINT_MISMATCH',
      `${path}: tensor ${t.name} has ${numel} elements, the destination ${dst.length}`,
    );
  }
  if (t.dtype === 'F32') {
    // fp32 on disk is the engine's layout: read straight into the weights, chunk by chunk.
    const bytes = new Uint8Array(dst.buffer, dst.byteOffset, dst.byteLength);
    for (let at = 0; at < bytes.length; at += CHUNK) {
      await readFully(fh, bytes.subarray(at, Math.min(bytes.length, at + CHUNK)), t.begin + at, path);
    }
    return;
  }
  const scratch = new Uint8Array(Math.min(CHUNK, t.byteLength));
  for (let at = 0; at < t.byteLength; at += CHUNK) {
    const n = Math.min(CHUNK, t.byteLength - at);
    await readFully(fh, scratch.subarray(0, n), t.begin + at, path);
    decodeChunk(t.dtype, new Uint16Array(scratch.buffer, 0, n / 2), dst.subarray(at / 2, at / 2 + n / 2));
  }
}

/**
 * Writes a .safetensors file tensor by tensor (header first, then each tensor's bytes, converted a
 * few MiB at a time): memory stays flat whatever the file size. Tensors are laid out as the
 * safetensors library orders them (wider dtypes first, then by name) and the header is padded with
 * spaces to a multiple of 8 bytes, so the same input gives the same bytes. Returns the number of
 * data bytes written.
 */
export async function writeSafetensors(
  path: string,
  given: readonly TensorSource[],
  metadata: Record<string, string> = {},
): Promise<number> {
  const tensors = [...given].sort(
    (a, b) => BYTES[b.dtype] - BYTES[a.dtype] || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of tensors) {
    const bytes = tensorBytes(t.dtype, t.data.length);
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((Buffer.byteLength(json) + 8) % 8)) % 8);
  const head = Buffer.from(json, 'utf8');
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(head.length));
  const fh = await open(path, 'w');
  try {
    let position = 0;
    const write = async (bytes: Uint8Array) => {
      let done = 0;
      while (done < bytes.length) {
        const { bytesWritten } = await fh.write(bytes, done, bytes.length - done, position + done);
        done += bytesWritten;
      }
      position += bytes.length;
    };
    await write(prefix);
    await write(head);
    let scratch: Uint16Array | undefined;
    for (const t of tensors) {
      if (t.dtype === 'F32') {
        const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
        for (let at = 0; at < bytes.length; at += CHUNK) await write(bytes.subarray(at, at + CHUNK));
        continue;
      }
      scratch ??= new Uint16Array(CHUNK / 2);
      for (let at = 0; at < t.data.length; at += scratch.length) {
        const src = t.data.subarray(at, at + scratch.length);
        encodeChunk(t.dtype, src, scratch);
        await write(new Uint8Array(scratch.buffer, 0, src.length * 2));
      }
    }
  } finally {
    await fh.close();
  }
  return offset;
}
