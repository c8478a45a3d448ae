#!/usr/bin/env bash
# Builds one probe (probes/NAME.cu: a standalone measurement behind a design decision, see
# probes/README.md) and runs it on this machine's GPU; its output goes to $OUT/probe.log.
# Usage: bash scripts/gpu-probe.sh NAME   (e.g. box_warp_prefix)   OUT: logs (default build/gpu-probe)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
probes=$(cd probes && ls -- *.cu | sed 's/\.cu$//' | tr '\n' ' ')
name=${1:-}
if [[ -z $name || ! -f probes/$name.cu ]]; then
  echo "gpu-probe: usage: bash scripts/gpu-probe.sh NAME, NAME one of: $probes" >&2
  exit 2
fi
OUT=${OUT:-build/gpu-probe}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
target=klab-probe-${name//_/-}
if ! { cmake --preset release && cmake --build --preset release --target "$target"; } >"$OUT/build.log" 2>&1; then
  tail -n 30 "$OUT/build.log"
  echo "gpu-probe: the build failed (log: $OUT/build.log)"
  exit 1
fi
"./build/release/probes/$target" | tee "$OUT/probe.log"
exit "${PIPESTATUS[0]}"
