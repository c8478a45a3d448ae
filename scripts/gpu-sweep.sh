#!/usr/bin/env bash
# DRAM bytes, time and L2 hit rate of every shape `klab tune` measures for one variant and class:
# builds klab, runs `klab tune` (into a scratch results folder, so that every shape is measured
# whatever results/ holds) under Nsight Compute with four metrics (one pass, clocks left as
# klab-bench runs them), then prints one line per launch shape (kernel, block, grid) with the
# medians over its launches (scripts/shape_sweep.py). Nsight flushes the caches before each
# launch, as klab's timing does. For the question what each shape of a tuning space costs in DRAM
# bytes, not only in time (docs/adding-a-variant.md, section 3).
#
# Usage: bash scripts/gpu-sweep.sh VARIANT CLASS   e.g. conv.box_pixel_lanes 8K/31x31/c3/aos
#   INPUT_MB=99.5328  adds DRAM read as a multiple of the filter's input (MB = 10^6 bytes)
#   KERNEL=REGEX      profiles only the kernels whose names match (default: every kernel of the run)
# Logs and the table under $OUT (default build/gpu-sweep): build.log, sweep.csv (klab tune's output
# and Nsight's messages, then its CSV), sweep.err, sweep.txt. Shapes whose parameters leave the block
# and the grid alike (an unroll factor, a prefetch depth) share one line.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-build/gpu-sweep}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"

fail() {
  echo "gpu-sweep: $*" >&2
  exit 2
}
[[ $# -eq 2 ]] || fail "usage: bash scripts/gpu-sweep.sh VARIANT CLASS (e.g. conv.box_pixel_lanes 8K/31x31/c3/aos)"
variant=$1
class=$2
command -v ncu >/dev/null || fail "ncu (Nsight Compute) is not on PATH"

start=$(date +%s)
if ! { cmake --preset release >"$OUT/build.log" 2>&1 && cmake --build --preset release --target klab >>"$OUT/build.log" 2>&1; }; then
  grep -E -A 6 "error" "$OUT/build.log" | head -n 40
  fail "the build failed (log: $OUT/build.log)"
fi
echo "gpu-sweep: built in $(($(date +%s) - start)) s"

scratch=$(mktemp -d) || fail "mktemp -d failed: no scratch folder for klab tune's records"
trap 'rm -rf "$scratch"' EXIT
kernels=()
[[ -n ${KERNEL:-} ]] && kernels=(-k "regex:$KERNEL")
metrics=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,lts__t_sector_hit_rate.pct
start=$(date +%s)
if ! ncu --clock-control none --csv --metrics "$metrics" "${kernels[@]}" \
  ./build/release/klab tune --results "$scratch" --variant "$variant" --class "$class" >"$OUT/sweep.csv" 2>"$OUT/sweep.err"; then
  grep -E '^==ERROR==' "$OUT/sweep.csv" | head -n 5
  tail -n 5 "$OUT/sweep.err"
  fail "klab tune under ncu failed (logs: $OUT/sweep.csv, $OUT/sweep.err)"
fi
grep -E '^\[[0-9]+/[0-9]+\]' "$OUT/sweep.csv" | sed 's/^/gpu-sweep: /'
echo "gpu-sweep: profiled in $(($(date +%s) - start)) s"
input=()
[[ -n ${INPUT_MB:-} ]] && input=(--input-mb "$INPUT_MB")
if ! python3 scripts/shape_sweep.py "$OUT/sweep.csv" "${input[@]}" >"$OUT/sweep.txt"; then
  # Nsight writes its own errors and warnings among the program's output ("No kernels were
  # profiled": a KERNEL that matched none; counters refused to this user).
  grep -E '^==(ERROR|WARNING)==' "$OUT/sweep.csv" | head -n 5
  fail "no table from $OUT/sweep.csv (Nsight's messages above${KERNEL:+; did KERNEL=$KERNEL match no kernel?})"
fi
cat "$OUT/sweep.txt"
