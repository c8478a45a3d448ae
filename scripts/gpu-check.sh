#!/usr/bin/env bash
# The GPU machine's check, in one call (e.g. through the device tool):
#   configure and build with the release preset, run every test (cpu and gpu labels), run the
#   GPU tests under compute-sanitizer (memcheck, racecheck, initcheck, synccheck; the conformance
#   suite on its reduced table), record the device, and print a short summary last. Logs go to $OUT (default build/gpu-check).
# Usage: bash scripts/gpu-check.sh            (KLAB_SANITIZE_FILTER='Suite.*' narrows the sanitizer runs)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-check}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"

status() { if [[ $1 -eq 0 ]]; then echo "ok"; else echo "FAILED (exit $1)"; fi; }

{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv || true; } >"$OUT/device.txt" 2>&1

start=$(date +%s)
cmake --preset release -DKLAB_SANITIZE_FILTER="${KLAB_SANITIZE_FILTER:--DeviceErrorPaths.*}" >"$OUT/build.log" 2>&1 &&
  cmake --build --preset release >>"$OUT/build.log" 2>&1
build=$?
build_seconds=$(($(date +%s) - start))

tests=1 sanitize=1 info=1
if [[ $build -eq 0 ]]; then
  ./build/release/klab info >>"$OUT/device.txt" 2>&1
  info=$?
  ctest --preset release --output-on-failure >"$OUT/ctest.log" 2>&1
  tests=$?
  conformance_cases=$(./build/release/tests/klab-tests-gpu --gtest_list_tests --gtest_filter='Variants/*' | grep -c '^  ')
  # Cases that ran and passed, from the conformance tests' own GoogleTest summaries.
  conformance_passed=$(awk '/^Command: .*gtest_filter=Variants\// {c = 1} c && /\[  PASSED  \] [0-9]+ test/ {sum += $4; c = 0} END {print sum + 0}' \
    build/release/Testing/Temporary/LastTest.log 2>/dev/null)
  ctest --preset sanitize -V >"$OUT/sanitize.log" 2>&1
  sanitize=$?
fi

{
  echo "== klab gpu-check summary"
  head -n 2 "$OUT/device.txt"
  echo "build (release preset)  : $(status $build) in ${build_seconds} s"
  echo "klab info               : $(status $info)"
  echo "ctest (cpu + gpu)       : $(status $tests) -- $(grep -E 'tests passed|tests failed' "$OUT/ctest.log" 2>/dev/null | tail -n1)"
  echo "  gpu tests skipped     : $(grep -c 'Skipped' "$OUT/ctest.log" 2>/dev/null)"
  echo "  conformance           : ${conformance_passed:-?} of ${conformance_cases:-?} cases (variant x problem) ran and passed; per variant:"
  grep -E 'gpu\.conformance\.' "$OUT/ctest.log" 2>/dev/null | sed 's/^ */    /' 
  echo "compute-sanitizer       : $(status $sanitize)"
  grep -E 'sanitize\.[a-z0-9.]+ .*(Passed|Failed|\*\*\*)' "$OUT/sanitize.log" 2>/dev/null | sed 's/^/  /'
  grep -E '(ERROR|RACECHECK) SUMMARY' "$OUT/sanitize.log" 2>/dev/null | sort | uniq -c | sed 's/^/  /'
} | tee "$OUT/summary.txt"
[[ $build -eq 0 && $tests -eq 0 && $sanitize -eq 0 && $info -eq 0 ]]
