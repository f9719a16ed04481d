import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSafetensors } from '@agentrl/engine';
import { EngineServerError } from './errors.js';

/**
 * The tensors of SGLang's `/update_weights_from_tensor` body, as this server reads them. SGLang's
 * own `serialized_named_tensors` are pickled torch tensors (CUDA IPC handles on a GPU), which only
 * a PyTorch process can open; here each entry is instead one safetensors blob, base64-encoded, and
 * `load_format` must say `"safetensors"`. The blobs are read by the engine's safetensors reader
 * (any of F32 / BF16 / F16, decoded to fp32) through a private temporary file.
 */
export async function decodeNamedTensors(
  serialized: readonly string[],
  loadFormat: string | null | undefined,
): Promise<Map<string, Float32Array>> {
  if (loadFormat !== 'safetensors')
    throw new EngineServerError(
      'WEIGHTS_REFUSED',
      `Failed to update weights from tensor: load_format ${JSON.stringify(loadFormat ?? null)} (SGLang's pickled torch tensors) cannot be read by this Node server; send each serialized_named_tensors entry as base64 safetensors bytes with load_format "safetensors", or use /update_weights_from_disk`,
    );
  const dir = await mkdtemp(join(tmpdir(), 'agentrl-tensors-'));
  const out = new Map<string, Float32Array>();
  try {
    for (const [i, entry] of serialized.entries()) {
      const path = join(dir, `${i}.safetensors`);
      await writeFile(path, Buffer.from(entry, 'base64'));
      let reader: Awaited<ReturnType<typeof openSafetensors>>;
      try {
        reader = await openSafetensors(path);
      } catch (err) {
        throw new EngineServerError(
          'WEIGHTS_REFUSED',
          `Failed to update weights from tensor: serialized_named_tensors[${i}] is not base64 safetensors bytes: ${(err as Error).message}`,
          { cause: err },
        );
      }
      try {
        for (const t of reader.tensors.values()) {
          const data = new Float32Array(t.shape.reduce((a, d) => a * d, 1));
          await reader.readInto(t, data);
          out.set(t.name, data);
        }
      } finally {
        await reader.close();
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return out;
}
