#!/usr/bin/env bash
# Issue 16's GPU run in one call (the device tool: OUT set, repository root): build, test, tune,
# benchmark and profile the Sobel, integral and box variants, then print a short table of times.
#   1. build the release preset;
#   2. the CPU tests; the GPU tests of sobel.register_window, integral.lookback and
#      conv.box_running_sums (their conformance cases, gpu.conformance.<stem>), their arithmetic
#      test, the 8K and deep look-back tests, the exact box suite; the library's GPU tests (every
#      variant through klab::filter, windows at unaligned addresses);
#   3. klab tune of the study's Sobel, integral and box classes for the op variants, old and new
#      (results/<gpu>/autotune.json, copied to $OUT for committing);
#   4. klab-bench on those rows (3 repetitions, L2 flushed, shapes from the tuning just made) and
#      klab report on them;
#   5. Nsight Compute on each op kernel at 8K (scripts/op-times.sh: time, DRAM bytes, warp
#      instructions, issue activity, registers, occupancy);
#   6. compute-sanitizer memcheck and racecheck on the new variants' conformance cases (reduced tables).
# Each stage has a time limit and its own log; a failed stage does not stop the later ones, and the
# whole run stays within BUDGET_S seconds (default 540: a stage that would not fit is skipped and
# says so). $OUT gets summary.txt (printed last), bench.json, op-times.csv, autotune.json and
# logs.tar.gz.
# Usage: OUT=/tmp/out bash scripts/gpu-ops.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-build/gpu-ops}
LOGS="$OUT/logs"
mkdir -p "$LOGS"
export PATH="/usr/local/cuda/bin:$PATH"
BUILD=build/release
GPU_TESTS="$BUILD/tests/klab-tests-gpu"
NEW_STEMS='sobel_register_window|integral_lookback|conv_box_running_sums'

deadline=$(($(date +%s) + ${BUDGET_S:-540}))
declare -a order=()
declare -A result=()
# stage NAME SECONDS COMMAND...: runs COMMAND with its output in $LOGS/NAME.log, for at most
# SECONDS and never past the deadline (less 20 s for the summary).
stage() {
  local name=$1 limit=$2
  shift 2
  local start
  start=$(date +%s)
  local left=$((deadline - start - 20))
  order+=("$name")
  if ((left < 15)); then
    result[$name]="skipped: out of time"
    return 125
  fi
  ((limit > left)) && limit=$left
  timeout --kill-after=15 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  local verdict="ok"
  [[ $rc -eq 124 || $rc -eq 137 ]] && verdict="TIMED OUT after ${limit} s"
  [[ $rc -ne 0 && $verdict == ok ]] && verdict="FAILED (exit $rc)"
  result[$name]="$verdict, $(($(date +%s) - start)) s"
  return $rc
}

{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || true; } >"$LOGS/device.txt" 2>&1

# 1. Build.
stage build 240 bash -c 'cmake --preset release && cmake --build --preset release'
built=$?

if [[ $built -eq 0 ]]; then
  # 2. Tests.
  stage cpu-tests 60 ctest --preset release -L cpu --output-on-failure
  stage conformance 150 ctest --preset release -R "^gpu\\.conformance\\.($NEW_STEMS)\$" --output-on-failure
  stage gpu-tests 120 "$GPU_TESTS" --gtest_brief=1 --gtest_filter='SobelRegisterWindowArithmetic.*:BoxExactSuite.*:OpConformanceTables.*:PlansOnTwoStreamsSuite.*:OpsLargeImages.SobelOn8KRgbAndGray:OpsLargeImages.IntegralLookback*:OpsLargeImages.BoxVariantsOn8KRgbBox9And31'
  stage api-tests 60 "$BUILD/api/klab-tests-api-gpu" --gtest_brief=1  # every variant through klab::filter, windows into larger images

  # 3. Tuning: the classes of the study's Sobel, integral and box rows.
  stage tune 150 "$BUILD/klab" tune --budget-s 0.1 \
    --variant sobel.register_window --variant sobel.fused --variant sobel.3kernel \
    --variant integral.lookback --variant integral.scan --variant conv.box_running_sums \
    --class sobel/8K/c1/aos --class sobel/8K/c3/aos \
    --class integral/8K/c1/aos/u64 --class integral/8K/c1/aos/u32 --class integral/4K/c1/aos/u32 --class integral/8K/c3/aos/u64 \
    --class 8K/3x3/c3/aos --class 8K/9x9/c3/aos --class 8K/31x31/c3/aos
  tuned=$(find results -name autotune.json -newer "$LOGS/device.txt" | head -n 1)  # this GPU's, just written
  [[ -n "$tuned" ]] && cp "$tuned" "$OUT/autotune.json"

  # 4. klab-bench on the rows of issue 16 (the quick study holds them all), and the report.
  filter='^((sobel|integral)\.[a-z_0-9]+|npp\.(sobel|integral|box)|conv\.(box_running_sums|box_integral|separable_fused)|baseline\.copy)/(8K|4K|4096x4096)/[a-z.]+/(sobel|integral|box3|box9|box31|copy)/'
  stage bench 180 "$BUILD/klab-bench" --klab_study=quick --klab_results=results --benchmark_filter="$filter" \
    --benchmark_repetitions=3 --benchmark_out="$OUT/bench.json" --benchmark_out_format=json
  stage report 30 "$BUILD/klab" report "$OUT/bench.json" --out "$LOGS/report" --no-plots

  # 5. Nsight Compute on every op kernel at 8K.
  if command -v ncu >/dev/null 2>&1; then
    stage ncu 120 env OUT="$LOGS/ncu" BUILD="$BUILD" bash scripts/op-times.sh
    cp "$LOGS/ncu/op-times.csv" "$OUT/op-times.csv" 2>/dev/null
  fi

  # 6. compute-sanitizer on the new variants' conformance cases, reduced tables.
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/compute-sanitizer/compute-sanitizer)
  for tool in memcheck racecheck; do
    stage "sanitize-$tool" 90 env KLAB_CONFORMANCE_TABLE=reduced "$sanitizer" --tool "$tool" --error-exitcode 1 --print-limit 20 \
      "$GPU_TESTS" --gtest_brief=1 "--gtest_filter=Variants/*/sobel_register_window__*:Variants/*/integral_lookback__*:Variants/*/conv_box_running_sums__*"
  done
fi

# The summary: stages, then the times against the copy floor and NPP.
python3 - "$OUT/bench.json" "$OUT/op-times.csv" >"$LOGS/table.txt" 2>&1 <<'EOF'
import csv, json, sys
try:
    doc = json.load(open(sys.argv[1]))
except Exception as e:
    print("no bench.json:", e)
    sys.exit(0)
medians = {}
for b in doc.get("benchmarks", []):
    if b.get("run_type") != "aggregate" or b.get("aggregate_name") != "median":
        continue
    name = b["run_name"].removesuffix("/manual_time")
    medians[name] = (b["real_time"], b.get("copy_floor_us"), b.get("block_x"), b.get("block_y"), b.get("label", ""))
targets = {  # issue 16 (H200): at most this many times the copy floor, at least this many times NPP
    ("8K", "gray", "sobel"): (1.5, 3), ("8K", "rgb.aos", "sobel"): (1.5, None),
    ("8K", "gray", "integral"): (1.3, 10), ("8K", "rgb.aos", "box9"): (1.3, 10), ("8K", "rgb.aos", "box31"): (1.3, 10),
}
print(f"{'variant':24} {'problem':34} {'us':>8} {'x floor':>8} {'NPP us':>8} {'x NPP':>7}  {'target':14} block")
for name, (us, floor, bx, by, label) in sorted(medians.items(), key=lambda kv: kv[0].split("/")[1:] + [kv[1][0]]):
    row, size, fmt, filt, border = name.split("/")[:5]
    if row.startswith(("npp.", "baseline.")):
        continue
    npp_row = {"sobel": "npp.sobel", "integral": "npp.integral"}.get(filt, "npp.box" if filt.startswith("box") else "")
    npp = medians.get(f"{npp_row}/{size}/{fmt}/{filt}/{border}")
    target = targets.get((size, fmt, filt))
    target_text = "" if not target else f"<={target[0]}x" + (f", >={target[1]}x NPP" if target[1] else "")
    print(f"{row:24} {size + '/' + fmt + '/' + filt:34} {us:8.1f} {us / floor if floor else float('nan'):8.2f} "
          f"{npp[0] if npp else float('nan'):8.1f} {npp[0] / us if npp else float('nan'):7.2f}  {target_text:14} "
          f"{int(bx) if bx else '-'}x{int(by) if by else '-'} {label[:60]}")
try:
    rows = list(csv.DictReader(open(sys.argv[2])))
    print("\nNsight Compute (L2 flushed per kernel): kernel, block, us, DRAM MB read/written, warp instructions M, issue %, regs, occupancy %")
    for r in rows:
        print(f"  {r['kernel'][:40]:40} {r['block']:12} {r['time_us']:>8} {r['dram_read_MB']:>8}/{r['dram_write_MB']:<8} "
              f"{r['warp_instructions_M']:>8} {r['issue_active_pct']:>4} {r['registers']:>4} {r['achieved_occupancy_pct']:>4}")
except Exception as e:
    print("no op-times.csv:", e)
EOF

{
  echo "== klab gpu-ops summary (issue 16)"
  cat "$LOGS/device.txt"
  for name in "${order[@]}"; do printf '%-18s: %s\n' "$name" "${result[$name]}"; done
  grep -hE '^(100% tests passed|[0-9]+% tests passed|The following tests FAILED)' "$LOGS"/conformance.log "$LOGS"/cpu-tests.log 2>/dev/null | sed 's/^/  /'
  grep -hE '\[  (PASSED|FAILED)  \]' "$LOGS"/gpu-tests.log 2>/dev/null | head -n 12 | sed 's/^/  gpu-tests: /'
  grep -hE '(ERROR|RACECHECK) SUMMARY' "$LOGS"/sanitize-*.log 2>/dev/null | sort | uniq -c | sed 's/^/  /'
  grep -hE '^\[[0-9]+/[0-9]+\].*(best|FAILED)' "$LOGS"/tune.log 2>/dev/null | sed 's/^/  tune: /'
  echo
  cat "$LOGS/table.txt"
} | tee "$OUT/summary.txt"

tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$LOGS"
