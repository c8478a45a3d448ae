#!/usr/bin/env bash
# Issue 19 on a GPU machine (e.g. through the device tool): `--device` on every command, and with
# two GPUs or more `klab run/tune/apply --device all` against one GPU.
#   1. build the release preset; the GPU tests of --device (tests/gpu/test_devices_gpu.cpp)
#   2. --device 0 works on info, klab-bench, tune, run, apply; --device 7 is a clear error on each;
#      run and tune --device all (one process per GPU) on a smoke study and a dry run
#   3. apply --device all against --device 0 over a batch (4K RGB, PPM and PNG): wall time, and
#      every output compared byte for byte (on one GPU both use the one GPU)
#   4. with 2+ GPUs: tune --device all and run --device all (quick study, no tuning) against one
#      GPU: wall time, the same records and rows
# Usage: bash scripts/gpu-devices.sh [one|multi|all]   one: 1-3; multi: the build, 3 and 4 (on a
# machine of 2+ GPUs, e.g. after `one` in an earlier call: the build is kept); all (default): 1-4.
# Logs and timings go to $OUT (default build/gpu-devices); the images to build/gpu-devices-work
# (not to $OUT). The summary comes last.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
part=${1:-all}
case $part in one | multi | all) ;; *) echo "usage: bash scripts/gpu-devices.sh [one|multi|all]" >&2; exit 2 ;; esac
OUT=${OUT:-build/gpu-devices}
WORK=build/gpu-devices-work
mkdir -p "$OUT"
rm -rf "$WORK" && mkdir -p "$WORK"
export PATH="/usr/local/cuda/bin:$PATH"
klab=./build/release/klab
bench=./build/release/klab-bench
summary=()
failures=0
note() { summary+=("$1"); }
check() {  # check NAME STATUS [DETAIL]: one summary line, counted when it failed
  if [[ $2 -eq 0 ]]; then note "ok      $1${3:+ -- $3}"; else note "FAILED  $1${3:+ -- $3}"; failures=$((failures + 1)); fi
}
now() { date +%s.%N; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
least() { awk -v a="$1" -v b="$2" 'BEGIN { print (b < a ? b : a) }'; }
# expect_error NAME FRAGMENT COMMAND...: the command exits 2 and prints FRAGMENT
expect_error() {
  local name=$1 fragment=$2 log="$OUT/error-${1// /-}.log"
  shift 2
  "$@" >"$log" 2>&1
  local rc=$?
  if [[ $rc -eq 2 ]] && grep -qF -- "$fragment" "$log"; then check "--device 7 refused by $name" 0 "$(tail -n 1 "$log" | cut -c1-150)"
  else check "--device 7 refused by $name" 1 "exit $rc, see $log"; fi
}

{ nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv || true; } >"$OUT/device.txt" 2>&1

# 1. Build, and the GPU tests of --device.
start=$(now)
cmake --preset release >"$OUT/build.log" 2>&1 && cmake --build --preset release >>"$OUT/build.log" 2>&1
build=$?
check "build (release preset)" $build "$(seconds "$start" "$(now)") s"
if [[ $build -ne 0 ]]; then tail -n 30 "$OUT/build.log"; printf '%s\n' "${summary[@]}"; exit 1; fi

"$klab" info --json >"$OUT/info.json" 2>&1
gpus=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['devices']))" "$OUT/info.json" 2>/dev/null || echo 0)
slugs=$(python3 -c "import json,sys; print(' '.join('%s:%s' % (d['index'], d['slug']) for d in json.load(open(sys.argv[1]))['devices']))" \
  "$OUT/info.json" 2>/dev/null)
check "klab info --json lists the devices with their slugs" $((gpus > 0 ? 0 : 1)) "$gpus GPU(s): $slugs"
slug0=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['devices'][0]['slug'])" "$OUT/info.json" 2>/dev/null)
"$klab" gen --pattern natural --size HD --seed 7 "$WORK/hd.png" >/dev/null 2>&1

if [[ $part != multi ]]; then
  ./build/release/tests/klab-tests-gpu --gtest_filter='Devices.*' >"$OUT/gtest-devices.log" 2>&1
  rc=$?
  skipped=$(grep -c '^\[  SKIPPED \] Devices\.' "$OUT/gtest-devices.log")
  check "GPU tests Devices.* (none skipped)" $((rc != 0 || skipped != 0)) \
    "$(grep -E '^\[  (PASSED|FAILED) +\] [0-9]+ test' "$OUT/gtest-devices.log" | tr '\n' ' ')${skipped} skipped"

  # 2. --device 0 on every command, --device 7 refused by every command.
  "$klab" info --device 0 >"$OUT/info-0.log" 2>&1
  check "klab info --device 0" $? "$(head -n 2 "$OUT/info-0.log" | tail -n 1)"
  "$bench" --device 0 --klab_study=smoke --benchmark_filter='^baseline.copy' --benchmark_repetitions=1 \
    --benchmark_out="$WORK/bench-0.json" --benchmark_out_format=json >"$OUT/bench-0.log" 2>&1
  check "klab-bench --device 0 (smoke study, copy rows)" $? \
    "gpu_name $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['context']['gpu_name'])" "$WORK/bench-0.json" 2>/dev/null)"
  "$klab" tune --device 0 --variant conv.global --size 480p --mask-size 3 --budget-s 0.05 --results "$WORK/tune-0" >"$OUT/tune-0.log" 2>&1
  check "klab tune --device 0 (conv.global, 480p 3x3)" $? "$(tail -n 1 "$OUT/tune-0.log")"
  "$klab" run --device 0 --study smoke --repetitions 2 --no-tune --results results --out "$WORK/run-smoke-0" >"$OUT/run-smoke-0.log" 2>&1
  check "klab run --device 0 (smoke study)" $? "$(tail -n 1 "$OUT/run-smoke-0.log")"
  "$klab" apply --backend gpu --device 0 --filter gaussian:5 "$WORK/hd.png" "$WORK/hd-0.png" >"$OUT/apply-0.log" 2>&1
  check "klab apply --device 0 (one HD file)" $? "$(grep -o 'on gpu 0 ([^)]*)' "$OUT/apply-0.log" | head -n 1)"

  bad=$((gpus > 7 ? gpus : 7))  # 7, or one past the last GPU on a machine of 8
  missing="there is no CUDA device $bad"
  expect_error "klab info" "$missing" "$klab" info --device "$bad"
  expect_error "klab-bench" "$missing" "$bench" --device "$bad" --klab_study=smoke --benchmark_list_tests=true
  expect_error "klab tune" "$missing" "$klab" tune --device "$bad" --dry-run --size HD --mask-size 3
  expect_error "klab run" "$missing" "$klab" run --device "$bad" --study smoke --out "$WORK/never"
  expect_error "klab apply" "$missing" "$klab" apply --backend gpu --device "$bad" --filter box:3 "$WORK/hd.png" "$WORK/never.png"

  # One process per GPU (the path of --device all), here on a smoke study and a dry run.
  "$klab" run --device all --study smoke --repetitions 2 --no-tune --results results --out "$WORK/run-smoke-all" \
    >"$OUT/run-smoke-all.log" 2>&1
  check "klab run --device all (smoke study)" $? "$(grep -E '^gpu [0-9]+ .*: (done|FAILED)' "$OUT/run-smoke-all.log" | tr '\n' ' ')"
  "$klab" tune --device all --dry-run --size HD --mask-size 3 >"$OUT/tune-dry-all.log" 2>&1
  check "klab tune --device all --dry-run" $? "$(grep -E '^gpu [0-9]+ .*: (done|FAILED)' "$OUT/tune-dry-all.log" | tr '\n' ' ')"
fi

# 3. The batch: one GPU (--device 0) against every GPU (--device all), outputs byte for byte.
# PPM in and out (little codec time, so that the GPUs' share shows), then PNG (the usual case).
mkdir -p "$WORK/ppm" "$WORK/png"
for i in $(seq 1 24); do "$klab" gen --pattern natural --size 4K --seed "$i" "$WORK/ppm/f$i.ppm" >/dev/null; done
for i in $(seq 1 8); do "$klab" gen --pattern natural --size 4K --seed "$i" "$WORK/png/f$i.png" >/dev/null; done
# batch FORMAT: --device 0 and --device all, twice each in turn (the best of two is kept: the
# first run of a process pays for CUDA's start), then every output compared.
batch() {
  local format=$1 t0 t1 t2 rc0=0 rcall=0 rc best0=999999 bestall=999999 same=0
  local options=(apply --backend gpu --filter gaussian:9 --border mirror --results results)
  for _ in 1 2; do
    t0=$(now); "$klab" "${options[@]}" --device 0 --out-dir "$WORK/out-$format-0" "$WORK/$format" >"$OUT/batch-$format-0.log" 2>&1
    rc=$?; ((rc != 0)) && rc0=$rc
    t1=$(now); "$klab" "${options[@]}" --device all --out-dir "$WORK/out-$format-all" "$WORK/$format" >"$OUT/batch-$format-all.log" 2>&1
    rc=$?; ((rc != 0)) && rcall=$rc
    t2=$(now)
    best0=$(least "$best0" "$(seconds "$t0" "$t1")")
    bestall=$(least "$bestall" "$(seconds "$t1" "$t2")")
  done
  for f in "$WORK/$format"/*; do cmp -s "$WORK/out-$format-0/$(basename "$f")" "$WORK/out-$format-all/$(basename "$f")" || same=1; done
  check "apply --device 0 ($format batch)" $rc0 "$(tail -n 1 "$OUT/batch-$format-0.log"), best of 2: $best0 s"
  check "apply --device all ($format batch, $gpus GPU(s))" $rcall "$(tail -n 1 "$OUT/batch-$format-all.log"), best of 2: $bestall s"
  check "apply --device all = --device 0, byte for byte ($format)" $same
  echo "$format batch: one GPU $best0 s, all ($gpus) $bestall s (best of 2 each)" >>"$OUT/timings.txt"
}
batch ppm
batch png
grep -h -- '^--device all:' "$OUT"/batch-*-all.log | head -n 1 | sed 's/^/  /' >>"$OUT/timings.txt"

# 4. Two GPUs or more: tune and run over every GPU against one.
if [[ $part == one ]]; then
  note "skipped tune/run --device all against one GPU (part 'one')"
elif [[ $gpus -ge 2 ]]; then
  tune_args=(--variant conv.global conv.constant --size HD 4K --mask-size 3 5 --layout aos --budget-s 0.05)
  t0=$(now); "$klab" tune --device 0 "${tune_args[@]}" --results "$WORK/tune-one" >"$OUT/tune-one.log" 2>&1; rc=$?
  t1=$(now); check "tune --device 0 (2 variants x 4 classes)" $rc "$(seconds "$t0" "$t1") s"
  "$klab" tune --device all "${tune_args[@]}" --results "$WORK/tune-all" >"$OUT/tune-all.log" 2>&1; rc=$?
  t2=$(now); check "tune --device all (the same jobs)" $rc "$(seconds "$t1" "$t2") s; $(grep -c '^\[gpu ' "$OUT/tune-all.log") prefixed lines"
  records() { python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['records']))" "$1" 2>/dev/null || echo "?"; }
  n_one=$(records "$WORK/tune-one/$slug0/autotune.json") n_all=$(records "$WORK/tune-all/$slug0/autotune.json")
  same=1
  [[ $n_one == "$n_all" && $n_one != "?" ]] && same=0
  check "tune --device all stored as many records as --device 0 ($slug0)" $same "one GPU $n_one, all $n_all"
  echo "tune: one GPU $(seconds "$t0" "$t1") s, all $(seconds "$t1" "$t2") s" >>"$OUT/timings.txt"

  t0=$(now); "$klab" run --device 0 --study quick --no-tune --results results --out "$WORK/run-one/$slug0" >"$OUT/run-one.log" 2>&1; rc=$?
  t1=$(now); check "run --device 0 (quick study, no tuning)" $rc "$(seconds "$t0" "$t1") s"
  "$klab" run --device all --study quick --no-tune --results results --out "$WORK/run-all" >"$OUT/run-all.log" 2>&1; rc=$?
  t2=$(now); check "run --device all (quick study, no tuning)" $rc "$(seconds "$t1" "$t2") s; $(grep -cE '^gpu [0-9]+ .*: idle' "$OUT/run-all.log") GPU(s) idle"
  echo "run (quick): one GPU $(seconds "$t0" "$t1") s, all $(seconds "$t1" "$t2") s" >>"$OUT/timings.txt"
  python3 - "$WORK/run-one/$slug0/bench.json" "$WORK/run-all/$slug0/bench.json" >"$OUT/run-rows.txt" 2>&1 <<'EOF'
import json, sys
rows = [sorted({b["run_name"] for b in json.load(open(p))["benchmarks"]}) for p in sys.argv[1:]]
print(f"rows: one GPU {len(rows[0])}, all {len(rows[1])}, same names: {rows[0] == rows[1]}")
sys.exit(0 if rows[0] == rows[1] else 1)
EOF
  check "run --device all wrote the rows --device 0 wrote ($slug0)" $? "$(cat "$OUT/run-rows.txt")"
  "$klab" compare "$WORK/run-one/$slug0/bench.json" "$WORK/run-all/$slug0/bench.json" >"$OUT/run-compare.txt" 2>&1
  note "        klab compare (one GPU -> all, $slug0): $(tail -n 1 "$OUT/run-compare.txt" | cut -c1-150)"
  cp -r "$WORK/run-all" "$OUT/run-all-results" 2>/dev/null
else
  note "skipped tune/run --device all against one GPU: $gpus GPU here (needs 2 or more)"
fi

{
  echo "== klab gpu-devices summary ($gpus GPU(s): $slugs)"
  head -n 3 "$OUT/device.txt"
  printf '%s\n' "${summary[@]}"
  echo "-- wall times (host, whole commands)"
  cat "$OUT/timings.txt" 2>/dev/null
  echo "gpu-devices: $failures check(s) failed; logs in $OUT"
} | tee "$OUT/summary.txt"
[[ $failures -eq 0 ]]
