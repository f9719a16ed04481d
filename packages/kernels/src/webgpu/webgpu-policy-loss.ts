import type { PolicyLossConfig } from '../config.js';
import { KernelError, KernelErrorCode } from '../errors.js';
import { tokenMath } from '../reference/token-math.js';
import type { GradTarget, PolicyLossInputs, PolicyLossResult } from '../types.js';
import { checkLogitsFinite } from '../validate.js';
import { type GpuDevice, getWebGpu } from './device.js';
import { NEG_BIG, ROW_GRAD_WGSL, ROW_STATS_WGSL } from './shaders.js';

// GPUBufferUsage / GPUMapMode flags (fixed by the spec), so this file needs no WebGPU globals.
const MAP_READ = 0x0001;
const COPY_SRC = 0x0004;
const COPY_DST = 0x0008;
const UNIFORM = 0x0040;
const STORAGE = 0x0080;

const pipelines = new WeakMap<GpuDevice, { stats: unknown; grad: unknown }>();

function pipelinesFor(device: GpuDevice): { stats: unknown; grad: unknown } {
  let p = pipelines.get(device);
  if (!p) {
    const make = (code: string) =>
      device.createComputePipeline({
        layout: 'auto',
        compute: { module: device.createShaderModule({ code }), entryPoint: 'main' },
      });
    p = { stats: make(ROW_STATS_WGSL), grad: make(ROW_GRAD_WGSL) };
    pipelines.set(device, p);
  }
  return p;
}

function buffer(device: GpuDevice, bytes: number, usage: number, data?: ArrayBufferView): GpuDevice {
  const b = device.createBuffer({ size: Math.max(16, Math.ceil(bytes / 4) * 4), usage });
  if (data) device.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, data.byteLength);
  return b;
}

async function readBack(device: GpuDevice, src: GpuDevice, bytes: number): Promise<Float32Array> {
  const staging = buffer(device, bytes, MAP_READ | COPY_DST);
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, 0, staging, 0, Math.max(16, Math.ceil(bytes / 4) * 4));
  device.queue.submit([enc.finish()]);
  await staging.mapAsync(MAP_READ);
  const out = new Float32Array(staging.getMappedRange().slice(0, bytes));
  staging.unmap();
  staging.destroy();
  return out;
}

function dispatch(device: GpuDevice, pipeline: GpuDevice, entries: GpuDevice[], rows: number): void {
  const bind = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: entries.map((resource, binding) => ({ binding, resource: { buffer: resource } })),
  });
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bind);
  const x = Math.min(rows, 65535);
  pass.dispatchWorkgroups(x, Math.ceil(rows / x));
  pass.end();
  device.queue.submit([enc.finish()]);
}

/**
 * The logits variant on WebGPU. Rows are processed in chunks that fit one storage binding
 * (128 MiB on lavapipe); the chunks stay resident between the two passes; the O(T) token math runs
 * in TS between them (the same code as the reference).
 */
export async function webgpuPolicyLoss(
  inp: PolicyLossInputs & { logits: Float32Array },
  cfg: PolicyLossConfig,
  out: GradTarget,
  T: number,
  /** Cap on one chunk's bytes (tests use it to exercise chunking); default: the device's binding limit. */
  maxChunkBytes?: number,
): Promise<PolicyLossResult> {
  const V = inp.vocabSize;
  checkLogitsFinite(inp.logits, V);
  const dlogits = out.inPlace ? inp.logits : (out.gradOut ?? new Float32Array(T * V));
  if (T === 0) {
    const tm = tokenMath(cfg, inp, new Float64Array(0), cfg.computeEntropy ? new Float64Array(0) : undefined);
    return { loss: tm.loss, dlogits, logprobs: new Float32Array(0), metrics: tm.metrics };
  }
  const { device, maxBinding } = await getWebGpu();
  const rowsPerChunk = Math.floor(Math.min(maxBinding, maxChunkBytes ?? maxBinding) / (V * 4));
  if (rowsPerChunk < 1) {
    throw new KernelError(
      KernelErrorCode.INVALID_ARGUMENT,
      `row of ${V} floats exceeds the WebGPU binding limit (${maxBinding} bytes)`,
      { field: 'vocabSize' },
    );
  }
  const { stats: statsPipe, grad: gradPipe } = pipelinesFor(device);
  const invTau = 1 / cfg.temperature;
  const targets = buffer(device, T * 4, STORAGE | COPY_DST, inp.targets);
  const stats = buffer(device, T * 16, STORAGE | COPY_SRC);
  const chunks: { row0: number; rows: number; logits: GpuDevice; params: GpuDevice }[] = [];
  const owned: GpuDevice[] = [targets, stats];
  try {
    for (let row0 = 0; row0 < T; row0 += rowsPerChunk) {
      const rows = Math.min(rowsPerChunk, T - row0);
      let host = inp.logits.subarray(row0 * V, (row0 + rows) * V);
      if (host.includes(Number.NEGATIVE_INFINITY))
        host = host.map((x) => (x === Number.NEGATIVE_INFINITY ? NEG_BIG : x));
      const params = new ArrayBuffer(32);
      new Uint32Array(params, 0, 4).set([V, rows, row0, cfg.computeEntropy ? 1 : 0]);
      new Float32Array(params, 16, 1)[0] = invTau;
      const chunk = {
        row0,
        rows,
        logits: buffer(device, host.byteLength, STORAGE | COPY_DST, host),
        params: buffer(device, 32, UNIFORM | COPY_DST, new Uint8Array(params)),
      };
      owned.push(chunk.logits, chunk.params);
      chunks.push(chunk);
      dispatch(device, statsPipe, [chunk.params, chunk.logits, targets, stats], rows);
    }
    const st = await readBack(device, stats, T * 16);
    const logprobs = new Float32Array(T);
    const entropy = cfg.computeEntropy ? new Float64Array(T) : undefined;
    for (let t = 0; t < T; t++) {
      const lp = st[4 * t + 2]!;
      logprobs[t] = lp <= NEG_BIG / 2 ? Number.NEGATIVE_INFINITY : lp; // an -inf target logit, sent as NEG_BIG
      if (entropy) entropy[t] = st[4 * t + 3]!;
    }
    const tm = tokenMath(cfg, inp, logprobs, entropy);
    const g = new Float32Array(T);
    for (let t = 0; t < T; t++) g[t] = tm.gradLogp[t]! * invTau;
    const gBuf = buffer(device, T * 4, STORAGE | COPY_DST, g);
    owned.push(gBuf);
    for (const c of chunks) {
      const outBuf = buffer(device, c.rows * V * 4, STORAGE | COPY_SRC);
      owned.push(outBuf);
      dispatch(device, gradPipe, [c.params, c.logits, targets, stats, gBuf, outBuf], c.rows);
      dlogits.set(await readBack(device, outBuf, c.rows * V * 4), c.row0 * V);
      outBuf.destroy();
    }
    return { loss: tm.loss, dlogits, logprobs, metrics: tm.metrics };
  } finally {
    for (const b of owned) b.destroy();
  }
}
