import {
  listBackends as listNativeBackends,
  NATIVE_OPERATIONS,
  type NativeBackendInfo,
  type NativeOperation,
  type NativeOperationInfo,
} from '@agentrl/native';
import { getWebGpu } from './webgpu/device.js';

export interface BackendInfo {
  name: 'reference' | 'cpu' | 'cuda' | 'hip' | 'webgpu';
  /** Built into this install (native objects compiled, `webgpu` package present). */
  compiled: boolean;
  /** Can run on this machine now. */
  runnable: boolean;
  detail: string;
  /** Native backends: per operation, whether it runs here and why not. */
  operations?: Record<NativeOperation, NativeOperationInfo>;
}

/**
 * Every backend of the policy loss and whether it can run here. On a CI box with nvcc and hipcc but
 * no GPU: cuda and hip are compiled but not runnable; webgpu runs on Mesa's lavapipe.
 */
export async function listBackends(): Promise<BackendInfo[]> {
  const out: BackendInfo[] = [
    { name: 'reference', compiled: true, runnable: true, detail: 'plain TypeScript, float64' },
  ];
  let native: NativeBackendInfo[];
  try {
    native = listNativeBackends();
  } catch (err) {
    const detail = (err as Error).message.split('\n')[0] ?? 'native addon not loadable';
    const operations = Object.fromEntries(
      NATIVE_OPERATIONS.map((op) => [op, { runnable: false, detail }]),
    ) as Record<NativeOperation, NativeOperationInfo>;
    native = (['cpu', 'cuda', 'hip'] as const).map((name) => ({
      name,
      compiled: false,
      runnable: false,
      devices: 0,
      detail,
      operations,
    }));
  }
  for (const n of native)
    out.push({
      name: n.name,
      compiled: n.compiled,
      runnable: n.runnable,
      detail: n.detail,
      operations: n.operations,
    });
  try {
    const gpu = await getWebGpu();
    out.push({ name: 'webgpu', compiled: true, runnable: true, detail: `Dawn on ${gpu.adapterInfo}` });
  } catch (err) {
    out.push({ name: 'webgpu', compiled: true, runnable: false, detail: (err as Error).message });
  }
  return out;
}
