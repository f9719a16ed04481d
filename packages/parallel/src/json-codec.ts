// The wire format of the JSON collectives (broadcastJson, allgatherJson, scatterJson): a JSON header
// plus the raw bytes of every typed array in it, so packed micro-batches (Int32Array token ids,
// Float32Array logprobs) travel as their bytes, not as {"0": ..} objects, and come back as the same
// typed arrays. JSON has no NaN or infinities (a -Infinity logprob would come back as null): numbers
// that are not finite travel tagged.
const NON_FINITE = '__agentrl_non_finite__';
const TYPED = '__agentrl_typed__';

const TYPED_ARRAYS = {
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
} as const;
type TypedKind = keyof typeof TYPED_ARRAYS;

const kindOf = (v: ArrayBufferView): TypedKind =>
  (Object.keys(TYPED_ARRAYS) as TypedKind[]).find((k) => v instanceof TYPED_ARRAYS[k]) as TypedKind;

const align8 = (n: number) => (n + 7) & ~7;

/** `value` as bytes: [header length u32][header JSON][padding to 8][typed-array bytes, 8-aligned]. */
export function encodeJson(value: unknown): Uint8Array {
  const blobs: Uint8Array[] = [];
  let offset = 0;
  const header = new TextEncoder().encode(
    JSON.stringify(value, (_k, v) => {
      if (typeof v === 'number' && !Number.isFinite(v)) return { [NON_FINITE]: String(v) };
      if (ArrayBuffer.isView(v) && !(v instanceof DataView)) {
        const kind = kindOf(v);
        const bytes = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
        const at = offset;
        blobs.push(bytes);
        offset += align8(bytes.length);
        return { [TYPED]: [kind, at, (v as unknown as { length: number }).length] };
      }
      return v;
    }) ?? 'null',
  );
  const start = align8(4 + header.length);
  const out = new Uint8Array(start + offset);
  new DataView(out.buffer).setUint32(0, header.length, true);
  out.set(header, 4);
  let at = start;
  for (const b of blobs) {
    out.set(b, at);
    at += align8(b.length);
  }
  return out;
}

/** The value encodeJson wrote; typed arrays are fresh copies (aligned, owning their memory). */
export function decodeJson<T>(bytes: Uint8Array): T {
  const n = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, true);
  const start = align8(4 + n);
  return JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + n)), (_k, v) => {
    if (v === null || typeof v !== 'object') return v;
    if (NON_FINITE in v) return Number(v[NON_FINITE]);
    if (TYPED in v) {
      const [kind, at, length] = v[TYPED] as [TypedKind, number, number];
      const Ctor = TYPED_ARRAYS[kind];
      const from = bytes.byteOffset + start + at;
      const copy = new Uint8Array(length * Ctor.BYTES_PER_ELEMENT);
      copy.set(new Uint8Array(bytes.buffer, from, copy.length));
      return new Ctor(copy.buffer);
    }
    return v;
  }) as T;
}
