#!/usr/bin/env bash
# Checks the engine's and the policy loss's GPU kernels WITHOUT a GPU: builds the same sources that
# become agentrl_hip.so (native/src/**/cuda/*.cu) with g++ against ROCm's header-only HIP-CPU
# runtime, where kernels run as host threads, then runs the device tests (the ones that skip where
# no GPU is present) with that object loaded as the `hip` backend, against the CPU engine.
#
# Not part of CI. Needs a checkout of https://github.com/ROCm/HIP-CPU (its include/, src/ and
# external/ folders) named by HIP_CPU_ROOT, and TBB (apt-get install -y libtbb-dev). Nothing of
# HIP-CPU is kept in this repository. The matrix products go through the engine's hipBLASLt path
# into a host stand-in of the library (packages/engine/test/fixtures/host_hipblaslt.c, written from
# hipBLASLt's documented API; it aborts on shapes that do not chain), and the device tests check that
# every product took that path; HIP_CPU_GEMM=fallback runs them on the engine's own kernel instead.
# What HIP-CPU cannot check: the real libraries, real warp/wavefront timing, and speed.
#
#   HIP_CPU_ROOT=/path/to/HIP-CPU scripts/hip-cpu-check.sh [vitest file filters...]
#   HIP_CPU_OUT=dir ... builds there (default native/build/hip-cpu; another one leaves a run that
#   has the default's object loaded alone)
#   HIP_CPU_TRAINER=1 ... also runs the trainer's device steps and `agentrl train --device rocm`
#   (the smoke preset, fp32 and --precision bf16: several minutes each through HIP-CPU)
#   HIP_CPU_DP=1 ... also runs GPU-rank data parallelism (packages/parallel/test/device-data-parallel.test.ts):
#   the device gradient reduce through a stand-in RCCL over MPI (test/fixtures/fake-libs/mpi_rccl.c,
#   built with mpicc; "device" memory is host memory here), at world size 1 and under mpirun -n 2, and
#   `agentrl train --device rocm` as 2 ranks against 1 (test/src/device-data-parallel.test.ts)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
: "${HIP_CPU_ROOT:?set HIP_CPU_ROOT to a checkout of github.com/ROCm/HIP-CPU}"
[ -f "$HIP_CPU_ROOT/include/hip/hip_runtime.h" ] || { echo "no include/hip/hip_runtime.h under $HIP_CPU_ROOT" >&2; exit 2; }
out="${HIP_CPU_OUT:-$root/native/build/hip-cpu}"
mkdir -p "$out"
jobs="${JOBS:-2}"
mapfile -t sources < <(cd "$root/native" && find src -path '*/cuda/*.cu' | sort)
echo "hip-cpu: compiling ${#sources[@]} sources with g++ (-j$jobs)"
printf '%s\n' "${sources[@]}" | xargs -P "$jobs" -I{} sh -c '
  obj="$0/$(echo "{}" | tr / _).o"
  if [ ! -f "$obj" ] || [ "$1/{}" -nt "$obj" ] || [ -n "$(find "$1/src" -name "*.h" -newer "$obj" | head -1)" ]; then
    nice g++ -std=c++17 -O2 -fPIC -DAGENTRL_HIP_CPU -I"$2/include" -I"$1/src" -x c++ -c "$1/{}" -o "$obj"
  fi' "$out" "$root/native" "$HIP_CPU_ROOT"
g++ -shared "$out"/*.o -ltbb -lpthread -o "$out/agentrl_hip.so"
echo "hip-cpu: built $out/agentrl_hip.so"
export AGENTRL_HIP_LIBRARY="$out/agentrl_hip.so" AGENTRL_GPU_TEST_DEVICE=rocm
case "${HIP_CPU_GEMM:-lt}" in
  lt)
    mkdir -p "$out/lt"
    gcc -std=c11 -shared -fPIC -O2 "$root/packages/engine/test/fixtures/host_hipblaslt.c" -o "$out/lt/libhipblaslt.so.1"
    export LD_LIBRARY_PATH="$out/lt:${LD_LIBRARY_PATH:-}" AGENTRL_GPU_TEST_GEMM=hipblasLt
    echo "hip-cpu: matrix products through the host hipBLASLt stand-in ($out/lt/libhipblaslt.so.1)"
    ;;
  fallback) export AGENTRL_GPU_GEMM=fallback ;;
  *) echo "HIP_CPU_GEMM must be lt or fallback" >&2; exit 2 ;;
esac
if [ "${HIP_CPU_SKIP_DEVICE:-0}" != 1 ]; then  # HIP_CPU_SKIP_DEVICE=1: only the optional parts below
  cd "$root/packages/engine" && nice npx vitest run test/device.test.ts test/device-index.test.ts "$@"
  cd "$root/packages/kernels" && nice npx vitest run test/fused-linear-device.test.ts "$@"
fi
if [ "${HIP_CPU_DP:-0}" = 1 ]; then
  dp="$out/dp"
  mkdir -p "$dp"
  fake="$root/packages/parallel/test/fixtures/fake-libs"
  mpicc -shared -fPIC -O2 "$fake/mpi_rccl.c" -o "$dp/librccl.so.1"
  gcc -shared -fPIC -O2 "$fake/fake_amdhip64.c" -o "$dp/libamdhip64.so.6"
  export AGENTRL_NCCL_LIBRARY="$dp/librccl.so.1" LD_LIBRARY_PATH="$dp:${LD_LIBRARY_PATH:-}" AGENTRL_DP_SHARED_DEVICE=1
  cd "$root/packages/parallel" && nice npx vitest run test/device-data-parallel.test.ts
  # and the trainer: mpirun -n 2 agentrl train --device rocm against -n 1 (a few minutes through HIP-CPU)
  cd "$root/test" && nice npx vitest run src/device-data-parallel.test.ts
fi
if [ "${HIP_CPU_TRAINER:-0}" = 1 ]; then
  cd "$root/apps/trainer" && nice npx vitest run src/train/native-policy.test.ts -t 'with --device'
  cd "$root/test" && nice npx vitest run src/device-cli.test.ts --testTimeout 900000
fi
