import { KernelError, KernelErrorCode } from '../errors.js';

// The few WebGPU types used here; the `webgpu` package's own typings declare them as globals, which
// would leak into every consumer's type check, so this file keeps a minimal local view.
export interface Gpu {
  /**
   * The navigator.gpu-like instance. It must stay referenced as long as the device lives: dawn.node
   * tears down its event loop when it is garbage-collected and the next mapAsync crashes the process.
   */
  instance: GpuDevice;
  device: GpuDevice;
  adapterInfo: string;
  maxBinding: number;
}
// biome-ignore lint/suspicious/noExplicitAny: Dawn's objects are used through a thin, local view.
export type GpuDevice = any;

let pending: Promise<Gpu> | undefined;

/**
 * One Dawn device per process, created on first use: `webgpu` (Dawn compiled for Node) on whatever
 * Vulkan driver is present; on a machine without a GPU that is Mesa's lavapipe (CPU).
 */
export function getWebGpu(): Promise<Gpu> {
  pending ??= (async () => {
    let mod: { create: (flags: string[]) => unknown; globals: Record<string, unknown> };
    try {
      mod = (await import('webgpu')) as unknown as typeof mod;
    } catch (err) {
      throw new KernelError(
        KernelErrorCode.BACKEND_UNAVAILABLE,
        `webgpu: the 'webgpu' package (Dawn) failed to load: ${(err as Error).message}`,
        { cause: err },
      );
    }
    Object.assign(globalThis, mod.globals);
    // biome-ignore lint/suspicious/noExplicitAny: see GpuDevice
    const gpu = mod.create([]) as any;
    const adapter = await gpu.requestAdapter();
    if (!adapter) {
      throw new KernelError(
        KernelErrorCode.BACKEND_UNAVAILABLE,
        'webgpu: no adapter; install a Vulkan driver (Mesa lavapipe: apt-get install mesa-vulkan-drivers)',
      );
    }
    const maxBinding = Math.min(adapter.limits.maxStorageBufferBindingSize, adapter.limits.maxBufferSize);
    const device = await adapter.requestDevice({
      requiredLimits: {
        maxStorageBufferBindingSize: maxBinding,
        maxBufferSize: adapter.limits.maxBufferSize,
      },
    });
    const info = adapter.info ?? {};
    const adapterInfo =
      [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(' ') ||
      'unknown adapter';
    return { instance: gpu, device, adapterInfo, maxBinding };
  })();
  pending.catch(() => {
    pending = undefined;
  });
  return pending;
}

/** Destroys the cached device (tests and benchmarks call this so the process can exit promptly). */
export async function disposeWebGpu(): Promise<void> {
  if (!pending) return;
  const p = pending;
  pending = undefined;
  try {
    (await p).device.destroy();
  } catch {
    // creation had failed: nothing to free
  }
}
