#!/usr/bin/env bash
# Per-kernel GPU time of the sobel, integral and box variants on 8K images, measured by Nsight
# Compute (gpu__time_duration, L2 flushed before every kernel, clocks not locked) with the DRAM
# bytes each kernel moved, its warp instructions, the share of cycles its schedulers issued, its
# registers and its achieved occupancy: the figures quoted in those kernels' preambles and notes.
# It profiles GPU tests that run each variant on 8K inputs and check the results exactly
# (tests/gpu/test_ops_large_images.cpp, OpsLargeImages):
#   sobel.*            7680x4320 RGB AoS and gray -> gray magnitude, replicate
#   integral.scan      7680x4320 gray -> u64, 4096x4096 gray -> u32
#   integral.lookback, integral.tile_gather  7680x4320 gray -> u64, 4096x4096 gray -> u32,
#                      7680x4320 RGB AoS -> u64
#   conv.box_*         7680x4320 RGB AoS, box 9x9 and 31x31, replicate
# Needs a build of klab-tests-gpu and ncu. Writes $OUT/op-times.csv (one row per kernel launch) and
# prints it. KERNELS (a regex of kernel function names) and TESTS (a GoogleTest filter) narrow it.
# Usage: BUILD=build/release bash scripts/op-times.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/op-times}
BUILD=${BUILD:-build/release}
KERNELS=${KERNELS:-'^(integral_|sobel_|box_|conv_box_)'}
TESTS=${TESTS:-'OpsLargeImages.IntegralScanOn8KGrayAndA4096SquareGray:OpsLargeImages.SobelOn8KRgbAndGray:OpsLargeImages.IntegralTiledVariantsOn8KGrayRgbAndA4096SquareGray:OpsLargeImages.BoxVariantsOn8KRgbBox9And31'}
mkdir -p "$OUT"
rm -f "$OUT/op-times.csv"  # a failed run leaves no earlier run's table looking current
export PATH="/usr/local/cuda/bin:$PATH"

metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed.sum
metrics+=,sm__inst_issued.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
metrics+=,launch__registers_per_thread
ncu --metrics "$metrics" --cache-control all --clock-control none --csv --print-units base --print-kernel-base function \
  -k "regex:$KERNELS" "$BUILD/tests/klab-tests-gpu" --gtest_filter="$TESTS" >"$OUT/ncu.log" 2>&1 || {
  tail -n 30 "$OUT/ncu.log"
  exit 1
}

# One row per launch (scripts/op_times.py: a launch missing a metric is an error, not a zero).
python3 scripts/op_times.py "$OUT/ncu.log" "$OUT/op-times.csv" || {
  grep -m 5 -E '^==(ERROR|WARNING)==' "$OUT/ncu.log" || true
  exit 1
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/GPU: /'
