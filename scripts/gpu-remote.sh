#!/usr/bin/env bash
# The GPU machine's half of scripts/gpu-bundle.sh: unpacks .gpu/ (Node, node_modules) into this checkout,
# then runs scripts/gpu-check.sh with a 9-minute limit, and copies its log and summary to $OUT (the device
# tool's folder that comes back) when it is set. GPU_CHECK_ARGS are passed on; GPU_BENCH_QUICK too.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
[ -f .gpu/node.xz ] && [ -f .gpu/node_modules.txz ] || { echo "gpu-remote: no .gpu/ bundle: run scripts/gpu-bundle.sh first and carry .gpu" >&2; exit 2; }
t0=$SECONDS
mkdir -p .gpu/node/bin
[ -x .gpu/node/bin/node ] || { xz -dc .gpu/node.xz > .gpu/node/bin/node && chmod +x .gpu/node/bin/node; }
[ -d node_modules/.pnpm ] || tar -xJf .gpu/node_modules.txz
echo "gpu-remote: unpacked in $((SECONDS - t0)) s; $(.gpu/node/bin/node --version)"
# The executor's sandbox for the trainer's smoke runs: the machine's bubblewrap, else the carried one.
if ! command -v bwrap >/dev/null && [ -x .gpu/bin/bwrap ]; then
  mkdir -p .gpu/bwrap-bin && cp .gpu/bin/bwrap .gpu/bwrap-bin/bwrap-real
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$root/.gpu/lib" "$root/.gpu/bwrap-bin/bwrap-real" > .gpu/bwrap-bin/bwrap
  chmod +x .gpu/bwrap-bin/bwrap
  export PATH="$root/.gpu/bwrap-bin:$PATH"
  echo "gpu-remote: bwrap from the bundle ($(bwrap --version 2>&1 | head -1))"
fi
export AGENTRL_NODE_DIR="$root/.gpu/node" GPU_CHECK_LOG="${OUT:-$root}/gpu-check.log"
timeout 540 bash scripts/gpu-check.sh ${GPU_CHECK_ARGS:-}
rc=$?
[ -n "${OUT:-}" ] && [ -f "$GPU_CHECK_LOG.summary" ] && cp "$GPU_CHECK_LOG.summary" "$OUT/" 2>/dev/null
echo "gpu-remote: gpu-check exited $rc after $((SECONDS - t0)) s"
exit $rc
