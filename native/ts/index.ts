import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The raw addon: `modules()` plus one namespace object per registered C++ component. */
export interface NativeAddon {
  modules(): string[];
  backends(): RawBackendInfo[];
  /** Comma-separated backends CMake compiled in, e.g. `cpu,cuda,hip`. */
  builtBackends: string;
  [component: string]: unknown;
}

/**
 * The operations a native backend can provide:
 * - `policyLoss`: the GRPO-RoC loss on materialised logits (`@agentrl/kernels` policyLoss)
 * - `fusedLinearLoss`: the fused-linear loss on hidden states (`fusedLinearPolicyLoss`)
 * - `engineTrain`: the engine's model forward / backward / AdamW with device-resident state
 * - `engineDecode`: KV-cache decode (`extend`) and on-device sampling
 */
export type NativeOperation = 'policyLoss' | 'fusedLinearLoss' | 'engineTrain' | 'engineDecode';

export const NATIVE_OPERATIONS: readonly NativeOperation[] = [
  'policyLoss',
  'fusedLinearLoss',
  'engineTrain',
  'engineDecode',
];

/** Whether one operation can run on one backend here, and why not when it cannot. */
export interface NativeOperationInfo {
  runnable: boolean;
  detail: string;
}

/** One native backend: `compiled` (built into this addon) and `runnable` (a device is usable here). */
export interface NativeBackendInfo {
  name: 'cpu' | 'cuda' | 'hip';
  compiled: boolean;
  runnable: boolean;
  /** Devices the runtime reports (1 for the CPU). */
  devices: number;
  /** Device name, threading, or why the backend cannot run. */
  detail: string;
  /** Per operation: can it run on this backend here, and why not. */
  operations: Record<NativeOperation, NativeOperationInfo>;
}

/** What the addon's `backends()` returns: the GPU entries list the C ABI symbols their object exports. */
export interface RawBackendInfo extends Omit<NativeBackendInfo, 'operations'> {
  symbols?: string[];
}

/** The C ABI entry point that provides each operation in agentrl_cuda.so / agentrl_hip.so. */
const OPERATION_SYMBOLS: Record<NativeOperation, string[]> = {
  policyLoss: ['agentrl_policy_loss'],
  fusedLinearLoss: ['agentrl_fused_linear'],
  engineTrain: ['agentrl_engine_create', 'agentrl_engine_policy_loss'],
  engineDecode: ['agentrl_engine_extend', 'agentrl_engine_sample'],
};

function operationsOf(b: RawBackendInfo, cpuDetail: string): Record<NativeOperation, NativeOperationInfo> {
  const out = {} as Record<NativeOperation, NativeOperationInfo>;
  const symbols = b.symbols ?? [];
  for (const op of NATIVE_OPERATIONS) {
    const missing = OPERATION_SYMBOLS[op].filter((s) => !symbols.includes(s));
    if (b.name === 'cpu') {
      out[op] = { runnable: true, detail: cpuDetail };
    } else if (!b.compiled || (!b.runnable && symbols.length === 0)) {
      out[op] = { runnable: false, detail: b.detail };
    } else if (missing.length > 0) {
      out[op] = {
        runnable: false,
        detail: `agentrl_${b.name}.so has no ${missing.join(', ')}: rebuild it (${nativeBuildCommand()})`,
      };
    } else {
      out[op] = { runnable: b.runnable, detail: b.detail };
    }
  }
  return out;
}

export class NativeLoadError extends Error {
  override readonly name = 'NativeLoadError';
  readonly code = 'NATIVE_NOT_FOUND' as const;
}

const here = dirname(fileURLToPath(import.meta.url));
/** native/ whether this file runs from ts/ (source) or dist/ (built). */
const packageRoot = resolve(here, '..');
const require = createRequire(import.meta.url);
let cached: NativeAddon | undefined;

/** The prebuilt addon's folder for this platform, as `scripts/prebuild.mjs` names it at pack time. */
export const PREBUILD_TARGET = `${process.platform}-${process.arch}`;

/**
 * The command that builds the addon from source, here: the package's own build script by absolute
 * path, so it works the same in a consumer's node_modules and in the agentrl workspace.
 */
export function nativeBuildCommand(): string {
  return `node ${resolve(packageRoot, 'scripts/build.mjs')}`;
}

/** The candidates loadNative tries, in order: explicit path, a source build, the prebuilt addon. */
export function nativeCandidates(): string[] {
  return [
    process.env.AGENTRL_NATIVE_PATH,
    resolve(packageRoot, 'build/Release/agentrl.node'),
    resolve(packageRoot, 'build/Debug/agentrl.node'),
    resolve(packageRoot, 'prebuilds', PREBUILD_TARGET, 'agentrl.node'),
  ].filter((p): p is string => typeof p === 'string' && p.length > 0);
}

/**
 * Loads the addon once: `AGENTRL_NATIVE_PATH` when set, then a source build (`build/Release`, then
 * `build/Debug`), then the addon prebuilt for this platform that the npm package carries
 * (`prebuilds/<platform>-<arch>/`, linux-x64 today). On failure throws one error that lists what was
 * tried and how to fix it.
 */
export function loadNative(): NativeAddon {
  if (cached) return cached;
  // OpenMP workers that spin after each parallel region steal the cores from the main thread (and
  // from the rollout's Python workers) on a shared or oversubscribed machine; sleeping workers cost
  // microseconds per region instead. libgomp reads this once, when the addon is first loaded.
  process.env.OMP_WAIT_POLICY ??= 'PASSIVE';
  const failures: string[] = [];
  for (const path of nativeCandidates()) {
    if (!existsSync(path)) {
      failures.push(`${path}: not found`);
      continue;
    }
    try {
      cached = require(path) as NativeAddon;
      return cached;
    } catch (err) {
      // A bad AGENTRL_CPU_KERNELS: the addon is fine, the message says what to set.
      if ((err as { code?: unknown }).code === 'CPU_KERNELS_UNAVAILABLE') throw err;
      failures.push(`${path}: ${(err as Error).message}`);
    }
  }
  throw new NativeLoadError(nativeLoadMessage(failures));
}

function nativeLoadMessage(failures: string[]): string {
  const prebuilt = existsSync(resolve(packageRoot, 'prebuilds', PREBUILD_TARGET));
  return [
    'agentrl: the native addon could not be loaded. Tried:',
    ...failures.map((f) => `  - ${f}`),
    prebuilt
      ? `The prebuilt addon for ${PREBUILD_TARGET} is there but did not load (the reason is above). Fix one of:`
      : `This package carries no prebuilt addon for ${PREBUILD_TARGET} (prebuilt: linux-x64). Fix one of:`,
    `  - build it from source: \`${nativeBuildCommand()}\` (needs cmake >= 3.18, a C++17 compiler and the cmake-js npm package: \`apt-get install cmake g++\` and \`npm install cmake-js\`; the script says what is missing)`,
    '  - point AGENTRL_NATIVE_PATH at a built agentrl.node',
    // The prebuilt addon links the system's OpenMP runtime, which slim images leave out.
    ...(failures.some((f) => f.includes('libgomp'))
      ? ['  - install OpenMP: `apt-get install libgomp1`']
      : []),
  ].join('\n');
}

let backendsCache: RawBackendInfo[] | undefined;

/**
 * What the native addon was compiled with and what can run on this machine, e.g. on a CI box with
 * nvcc but no GPU: `{ name: 'cuda', compiled: true, runnable: false, detail: '... no usable device ...' }`.
 * The cpu entry's detail names the active CPU kernel path (see cpuKernels()). Probing a GPU runtime
 * happens once per process.
 */
export function listBackends(): NativeBackendInfo[] {
  const addon = loadNative();
  backendsCache ??= addon.backends() as RawBackendInfo[];
  const kernels = (addon.cpuKernels as CpuKernelsBinding | undefined)?.info();
  const cpuDetail = kernels
    ? `CPU kernels: ${kernels.active} (this CPU runs ${kernels.supported.join(', ')})`
    : 'CPU kernels: built for this machine only (-march=native)';
  return backendsCache.map((raw) => {
    const { symbols: _symbols, ...b } = raw;
    const detail = b.name === 'cpu' ? `${b.detail}; ${cpuDetail}` : b.detail;
    return { ...b, detail, operations: operationsOf(raw, cpuDetail) };
  });
}

/**
 * ISA levels of the engine's CPU kernels (GEMMs, norms, RoPE, attention), best first: `avx512`
 * (AVX-512 F/BW/DQ/VL + the avx2 set), `avx2` (AVX2, FMA, F16C, BMI1/2), `portable` (the
 * architecture's baseline; on x86-64 no FMA, so it rounds products and sums separately). avx512 and
 * avx2 give the same bits; portable differs from them in the last bits (see native/README.md).
 */
export type CpuKernelPath = 'avx512' | 'avx2' | 'portable';

export const CPU_KERNEL_PATHS: readonly CpuKernelPath[] = ['avx512', 'avx2', 'portable'];

/** Which CPU kernel path runs, and which this addon and this CPU offer (best first). */
export interface CpuKernelsInfo {
  /** The path every CPU kernel call takes now. */
  active: CpuKernelPath;
  /** Paths compiled into this addon that this CPU (and its OS) can run; always ends with `portable`. */
  supported: CpuKernelPath[];
  /** Paths compiled into this addon: all three on x86-64, `portable` elsewhere. */
  compiled: CpuKernelPath[];
}

interface CpuKernelsBinding {
  info(): CpuKernelsInfo;
  select(path: string): CpuKernelsInfo;
}

function cpuKernelsBinding(): CpuKernelsBinding {
  const binding = loadNative().cpuKernels as CpuKernelsBinding | undefined;
  if (!binding) {
    throw new NativeLoadError(
      `agentrl: this addon predates CPU kernel dispatch (it has no cpuKernels); rebuild it: \`${nativeBuildCommand()}\``,
    );
  }
  return binding;
}

/**
 * The CPU kernel paths: the best one this CPU runs is active unless `AGENTRL_CPU_KERNELS`
 * (read when the addon loads) or setCpuKernels() chose another. A bad `AGENTRL_CPU_KERNELS` fails
 * the addon's load with the valid choices and what this CPU runs.
 */
export function cpuKernels(): CpuKernelsInfo {
  return cpuKernelsBinding().info();
}

/**
 * Switches every CPU kernel to `path` (tests run each supported path this way); returns the new
 * state. Throws, naming the valid choices and what this CPU runs, for a path that is misspelt, not
 * compiled in, or needs instructions this CPU lacks. Not while another thread runs a kernel.
 */
export function setCpuKernels(path: CpuKernelPath): CpuKernelsInfo {
  if (typeof path !== 'string') {
    throw new TypeError(
      `agentrl: setCpuKernels takes one of ${CPU_KERNEL_PATHS.join(', ')}, not ${typeof path}`,
    );
  }
  return cpuKernelsBinding().select(path);
}
