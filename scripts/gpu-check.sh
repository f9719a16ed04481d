#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU and CUDA, builds the addon for that GPU (Hopper:
# sm_90a), runs every GPU test (the ones CI lists as skipped: engine — forward, gradients, AdamW,
# KV cache, on-device sampling against the TS sampler, the bf16 tensor-core attention against SIMT,
# the device Generator, the O(T) bytes a training or decode step moves, bf16 against fp32 —,
# kernels, the trainer's device steps and `agentrl train --preset smoke --device cuda`, also with
# `--precision bf16`; NCCL at world size 1 and the device gradient reduce through it) and the GPU
# bench beside PyTorch + transformers on the same GPU (training also with AGENTRL_GPU_ATTENTION=mma),
# and prints one summary. Written to finish in under 8 minutes on one
# H200; GPU_BENCH_QUICK=1 shrinks the bench (2 layers, short sequences) for a first try.
#
# Needs: nvidia-smi and nvcc (PATH or /usr/local/cuda/bin); Node >= 20 on PATH or unpacked from a
# tarball at AGENTRL_NODE_DIR (its bin/node); this checkout with node_modules installed
# (pnpm install); cmake; python3 with torch and transformers for the baseline (skipped without).
# cuBLASLt is found in /usr/local/cuda/lib64 or in python3's nvidia-cublas wheel; without it the
# GEMMs take the fallback kernel and the summary says so.
#   scripts/gpu-check.sh            # everything
#   AGENTRL_CUDA_ARCH=90 scripts/gpu-check.sh   # another target (default 90a)
#   GPU_CHECK_ONLY=tests | bench scripts/gpu-check.sh   # the build, then only the tests or only the benches
#   (two device calls of under 10 minutes each; the second finds the build already there)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
log="${GPU_CHECK_LOG:-$root/gpu-check.log}"
: >"$log"
say() { echo "$*" | tee -a "$log"; }
[ -n "${AGENTRL_NODE_DIR:-}" ] && export PATH="$AGENTRL_NODE_DIR/bin:$PATH"
export PATH="/usr/local/cuda/bin:$PATH"
command -v node >/dev/null || { say "gpu-check: no node (put it on PATH or set AGENTRL_NODE_DIR)"; exit 2; }
command -v nvidia-smi >/dev/null || { say "gpu-check: no nvidia-smi: this is not a machine with an NVIDIA GPU"; exit 2; }
command -v nvcc >/dev/null || { say "gpu-check: no nvcc (CUDA toolkit) on PATH or in /usr/local/cuda/bin"; exit 2; }
[ -d "$root/native/node_modules" ] || { say "gpu-check: native/node_modules missing: run pnpm install first"; exit 2; }
gpu="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
say "gpu-check $(date -u +%FT%TZ) on: $gpu; node $(node --version); $(nvcc --version | tail -1)"

# The folder of python3's nvidia-* wheels that holds a library matching $1, if any.
wheel_dir() {
  python3 - "$1" <<'PY' 2>/dev/null
import glob, os, sys
for base in sys.path:
    for p in glob.glob(os.path.join(base, "nvidia", "**", sys.argv[1]), recursive=True):
        print(os.path.dirname(p)); raise SystemExit
PY
}

# cuBLASLt at run time (dlopen'ed by agentrl_cuda.so): the toolkit's, else the one of python3's
# nvidia-cublas wheel (nvidia/cublas/lib for CUDA 12 wheels, nvidia/cu13/lib for CUDA 13).
for d in /usr/local/cuda/lib64 "$(wheel_dir 'libcublasLt.so*')"; do
  if [ -n "$d" ] && ls "$d"/libcublasLt.so* >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
    # and the engine device tests then check that cuBLASLt ran every one of their products (a
    # product it refuses falls back to the slow kernel without an error)
    export AGENTRL_GPU_TEST_GEMM=cublasLt
    say "cuBLASLt: $d"
    break
  fi
done

# NCCL and the CUDA runtime the NCCL binding dlopens: python3's nvidia-nccl / nvidia-cuda-runtime
# wheels (nvidia/nccl/lib, nvidia/cuda_runtime/lib or nvidia/cu13/lib) where they exist, ahead of
# the system's.
for lib in libnccl.so.2 'libcudart.so.1[0-9]*'; do
  d="$(wheel_dir "$lib")"
  if [ -n "$d" ]; then export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; say "$lib: $d"; fi
done
gpus="$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)"
[ "$gpus" -ge 2 ] && export AGENTRL_DP_MULTI_GPU=1

only="${GPU_CHECK_ONLY:-all}"
case "$only" in all | tests | bench) ;; *) say "gpu-check: GPU_CHECK_ONLY must be all, tests or bench; got $only"; exit 2 ;; esac
want() { [ "$only" = all ] || [ "$only" = "$1" ]; }
status=0
step() { # name, command...
  local name="$1"; shift
  local t0=$SECONDS
  if "$@" >>"$log" 2>&1; then say "  ok    $name ($((SECONDS - t0)) s)"; else say "  FAIL  $name ($((SECONDS - t0)) s): see $log"; status=1; fi
}
export AGENTRL_CUDA=ON AGENTRL_HIP=OFF AGENTRL_CUDA_ARCH="${AGENTRL_CUDA_ARCH:-90a}" AGENTRL_GPU_TEST_DEVICE=cuda
step "build (sm_${AGENTRL_CUDA_ARCH})" bash -c "cd '$root/native' && node scripts/build.mjs && npx tsc -p tsconfig.build.json"
want tests && step "engine device tests" bash -c "cd '$root/packages/engine' && npx vitest run test/device.test.ts test/device-index.test.ts"
want tests && step "kernels device tests" bash -c "cd '$root/packages/kernels' && npx vitest run test/fused-linear-device.test.ts test/backends.test.ts test/bf16.test.ts"
want tests && step "trainer device tests" bash -c "cd '$root/apps/trainer' && npx vitest run src/train/native-policy.test.ts -t 'with --device'"
want tests && step "agentrl train --device cuda (smoke preset)" bash -c "cd '$root/test' && timeout 420 npx vitest run src/device-cli.test.ts"
want tests && step "NCCL all-reduce at world size 1" bash -c "cd '$root/packages/parallel' && timeout 120 node --conditions=@agentrl/source --import tsx test/fixtures/nccl-world1.ts"
want tests && step "data-parallel gradients on the device through NCCL (world size 1; 2 ranks with 2+ GPUs)" bash -c "cd '$root/packages/parallel' && timeout 300 npx vitest run test/device-data-parallel.test.ts && cd '$root/test' && timeout 300 npx vitest run src/device-data-parallel.test.ts"
want tests && step "bf16 variant of the engine forward tests" bash -c "cd '$root/packages/engine' && AGENTRL_GPU_PRECISION=bf16 npx vitest run test/device.test.ts -t 'forward hidden'"
want bench && step "agentrl GPU bench" bash -c "cd '$root/packages/engine' && timeout 240 npx vitest run --config bench/vitest.config.ts bench/gpu.bench-run.ts"
# The bf16 tensor-core attention (opt-in, AGENTRL_GPU_ATTENTION=mma): against SIMT, then its train figure.
want tests && step "tensor-core attention against SIMT" bash -c "cd '$root/packages/engine' && timeout 120 npx vitest run test/attention-mma.test.ts"
want bench && step "agentrl GPU bench, train with AGENTRL_GPU_ATTENTION=mma" bash -c "cd '$root/packages/engine' && AGENTRL_GPU_ATTENTION=mma GPU_BENCH_ONLY=train timeout 150 npx vitest run --config bench/vitest.config.ts bench/gpu.bench-run.ts"
if ! want bench; then
  :
elif python3 -c 'import torch, transformers' 2>/dev/null; then
  step "PyTorch + transformers bench" timeout 180 python3 "$root/scripts/gpu-bench-torch.py"
else
  say "  skip  PyTorch bench (python3 has no torch/transformers)"
fi
say "summary:"
grep -hE '^(GPU_BENCH|TORCH_BENCH) ' "$log" | tee -a "$log.summary" || true
grep -hE 'Tests +[0-9]+' "$log" | sed 's/^/  tests: /' || true
say "gpu-check: $([ $status = 0 ] && echo PASS || echo FAIL) (log: $log)"
exit $status
