#!/usr/bin/env bash
# Per-kernel GPU time of every convolution variant on an 8K RGB image, measured by Nsight Compute
# (gpu__time_duration, L2 flushed before the kernel, clocks not locked): the figures quoted in the
# kernels' preambles until klab-bench reports them with the copy floor and NPP beside them.
# A variant that launches several kernels (conv.separable_2pass: a row and a column kernel) is
# timed as the sum of the kernels of one launch (the `kernels` column says how many).
# Needs a release build (cmake --workflow --preset release; KLAB=path/to/klab for another build)
# and ncu. Writes $OUT/kernel-times.csv.
# A variant that refuses a filter (conv.box_integral takes box masks only; `klab list` shows each
# variant's refusals) is skipped, with its reason printed and a "skipped" row in the CSV.
# Usage: bash scripts/kernel-times.sh [masks...]      (default: gaussian:3 gaussian:9)
#        VARIANTS="conv.separable_fused conv.separable_2pass" bash scripts/kernel-times.sh ...   (only these)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/kernel-times}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
klab=${KLAB:-./build/release/klab}
filters=("$@")
[[ ${#filters[@]} -gt 0 ]] || filters=(gaussian:3 gaussian:9)

image="$OUT/natural-8K.png"
[[ -f $image ]] || "$klab" gen --pattern natural --size 8K "$image" >/dev/null
variants=${VARIANTS:-}
[[ -n $variants ]] || variants=$("$klab" list --json | python3 -c 'import json,sys; print(" ".join(v["name"] for v in json.load(sys.stdin)["variants"] if v["op"] == "convolve"))')

echo "variant,filter,block,kernels,kernel_us" >"$OUT/kernel-times.csv"
for filter in "${filters[@]}"; do
  for variant in $variants; do
    # klab apply launches the plan twice (a warm-up, then the timed launch) and, for an AoS image,
    # nothing else: of the 2n kernel rows, the last n are the timed launch, summed.
    # A failing klab must not end the script (set -e): its log says why, looked at below.
    ncu --metrics gpu__time_duration.sum --cache-control all --clock-control none --csv --print-units base \
      "$klab" apply --backend gpu --variant "$variant" --filter "$filter" "$image" "$OUT/out.ppm" >"$OUT/ncu.log" 2>&1 || true
    # The variant refuses the problem (prepare(): "<variant> does not support <problem>: <reason>;
    # allowed: ..."): skip it, saying why, without the "allowed" hint.
    refusal=$(grep -m 1 -F "klab: $variant does not support " "$OUT/ncu.log" || true)
    if [[ -n $refusal ]]; then
      refusal=${refusal#klab: }
      echo "skipped $variant for $filter: ${refusal%%; allowed: *}" >&2
      echo "$variant,$filter,,0,skipped" >>"$OUT/kernel-times.csv"
      continue
    fi
    rows=$(grep -c gpu__time_duration "$OUT/ncu.log" || true)
    if [[ $rows -eq 0 || $((rows % 2)) -ne 0 ]]; then
      echo "$variant $filter: $rows kernel rows in $OUT/ncu.log, expected two equal launches" >&2
      tail -n 5 "$OUT/ncu.log" >&2
      echo "$variant,$filter,,$rows,failed" >>"$OUT/kernel-times.csv"
      continue
    fi
    us=$(grep gpu__time_duration "$OUT/ncu.log" | tail -n $((rows / 2)) |
      awk -F'","' '{gsub(/[",]/, "", $NF); sum += $NF} END {printf "%.1f", sum / 1000}')
    block=$(sed -n 's/.*block \([0-9x]*\),.*/\1/p' "$OUT/ncu.log" | head -n 1)  # klab may name it twice
    echo "$variant,$filter,$block,$((rows / 2)),$us" >>"$OUT/kernel-times.csv"
  done
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/GPU: /'
sed 's/,/\t/g' "$OUT/kernel-times.csv"
