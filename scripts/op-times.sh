#!/usr/bin/env bash
# Per-kernel GPU time of the sobel, integral and box-integral variants on 8K images, measured by
# Nsight Compute (gpu__time_duration, L2 flushed before every kernel, clocks not locked) with the
# DRAM bytes each kernel moved, its warp instructions and its achieved occupancy: the figures
# quoted in those kernels' preambles until klab-bench reports them. It profiles the GPU test suite OpsLargeImages (tests/gpu/test_conformance_ops.cpp),
# which runs each variant once on 8K inputs and checks the results exactly:
#   integral.scan      7680x4320 gray -> u64, then 4096x4096 gray -> u32
#   sobel.fused        7680x4320 RGB AoS -> gray magnitude, replicate
#   sobel.3kernel      the same problem
#   conv.box_integral  7680x4320 RGB AoS, box 9x9, replicate
# Needs a build of klab-tests-gpu and ncu. Writes $OUT/op-times.csv (one row per kernel launch).
# Usage: BUILD=build/release bash scripts/op-times.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/op-times}
BUILD=${BUILD:-build/release}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"

ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
  --cache-control all --clock-control none --csv --print-units base --print-kernel-base function \
  -k 'regex:^(integral_|sobel_|box_)' \
  "$BUILD/tests/klab-tests-gpu" --gtest_filter='OpsLargeImages.*' >"$OUT/ncu.log" 2>&1 || {
  tail -n 30 "$OUT/ncu.log"
  exit 1
}

python3 - "$OUT/ncu.log" "$OUT/op-times.csv" <<'EOF'
import csv, sys
rows = [line for line in open(sys.argv[1]) if line.startswith('"')]
kernels = {}
for r in csv.DictReader(rows):
    k = kernels.setdefault(int(r["ID"]), {"kernel": r["Kernel Name"], "grid": r["Grid Size"], "block": r["Block Size"]})
    k[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
with open(sys.argv[2], "w") as out:
    out.write("id,kernel,grid,block,time_us,dram_read_MB,dram_write_MB,warp_instructions_M,achieved_occupancy_pct\n")
    for i, k in sorted(kernels.items()):
        line = "{},{},{},{},{:.1f},{:.1f},{:.1f},{:.1f},{:.0f}".format(
            i, k["kernel"], k["grid"].replace(",", " "), k["block"].replace(",", " "),
            k.get("gpu__time_duration.sum", 0) / 1000, k.get("dram__bytes_read.sum", 0) / 1e6,
            k.get("dram__bytes_write.sum", 0) / 1e6, k.get("sm__inst_executed.sum", 0) / 1e6,
            k.get("sm__warps_active.avg.pct_of_peak_sustained_active", 0))
        out.write(line + "\n")
        print(line)
EOF
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/GPU: /'
