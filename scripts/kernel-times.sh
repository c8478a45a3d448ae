#!/usr/bin/env bash
# Per-kernel GPU time of every convolution variant on an 8K RGB image, measured by Nsight Compute
# (gpu__time_duration, L2 flushed before the kernel, clocks not locked): the figures quoted in the
# kernels' preambles until klab-bench reports them with the copy floor and NPP beside them.
# Needs a release build (cmake --workflow --preset release) and ncu. Writes $OUT/kernel-times.csv.
# Usage: bash scripts/kernel-times.sh [masks...]      (default: gaussian:3 gaussian:9)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/kernel-times}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
klab=./build/release/klab
filters=("$@")
[[ ${#filters[@]} -gt 0 ]] || filters=(gaussian:3 gaussian:9)

image="$OUT/natural-8K.png"
[[ -f $image ]] || "$klab" gen --pattern natural --size 8K "$image" >/dev/null
variants=$("$klab" list --json | python3 -c 'import json,sys; print(" ".join(v["name"] for v in json.load(sys.stdin)["variants"] if v["op"] == "convolve"))')

echo "variant,filter,block,kernel_us" >"$OUT/kernel-times.csv"
for filter in "${filters[@]}"; do
  for variant in $variants; do
    # klab apply launches twice (a warm-up, then the timed launch); the last kernel row is the timed one.
    ncu --metrics gpu__time_duration.sum --cache-control all --clock-control none --csv --print-units base \
      "$klab" apply --backend gpu --variant "$variant" --filter "$filter" "$image" "$OUT/out.ppm" >"$OUT/ncu.log" 2>&1
    us=$(grep gpu__time_duration "$OUT/ncu.log" | tail -n 1 | awk -F'","' '{gsub(/[",]/, "", $NF); printf "%.1f", $NF / 1000}')
    block=$(sed -n 's/.*block \([0-9x]*\),.*/\1/p' "$OUT/ncu.log")
    echo "$variant,$filter,$block,$us" >>"$OUT/kernel-times.csv"
  done
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/GPU: /'
sed 's/,/\t/g' "$OUT/kernel-times.csv"
