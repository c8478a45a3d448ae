#!/usr/bin/env bash
# The GPU machine's check of klab as a library (issue 18), in one call. Steps (STEPS picks some):
#   build     the release preset
#   ctest     the library's C++ tests and `klab apply`'s GPU tests (its auto choice moved into
#             autotune/variant_choice): ctest -R 'Library|ApplyGpu|Autotune'
#   consumer  cmake --install, examples/ built against the package and run on the GPU: its output
#             equal to `klab apply --backend gpu`'s byte for byte
#   python    pip install --no-build-isolation (offline: scikit-build-core and nanobind must be
#             installed) into build/gpu-python-site (on PYTHONPATH), building in build/release
#             (only the module is new)
#   pytest    python/tests, GPU tests included (PyTorch, CuPy)
#   sanitize  one Python run (python/tests/sanitize_run.py) under compute-sanitizer memcheck
#   peers     python -m klab.peers into $OUT/peers (peers.json, peers.md)
# and a short summary last. Logs go to $OUT (default build/gpu-python).
# Usage: bash scripts/gpu-python.sh [PEERS OPTIONS...]      (e.g. --sizes HD,8K)
#        STEPS="python peers" bash scripts/gpu-python.sh     (on a machine that holds the build)
# PYTHON names the interpreter (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-python}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PATH="/usr/local/cuda/bin:$PATH"
PYTHON=${PYTHON:-python3}
STEPS=" ${STEPS:-build ctest consumer python pytest sanitize peers} "
wanted() { [[ "$STEPS" == *" $1 "* ]]; }
declare -A result seconds
step() {  # step NAME COMMAND...: runs it when wanted, records its status and time
  local name=$1
  shift
  if ! wanted "$name"; then
    result[$name]="not run"
    return
  fi
  local start
  start=$(date +%s)
  "$@"
  local status=$?
  seconds[$name]=$(($(date +%s) - start))
  if [[ $status -eq 0 ]]; then result[$name]="ok"; else result[$name]="FAILED (exit $status)"; fi
}

build() { cmake --preset release >"$OUT/build.log" 2>&1 && cmake --build --preset release >>"$OUT/build.log" 2>&1; }

library_ctest() { ctest --preset release -R 'Library|ApplyGpu|Autotune' --output-on-failure >"$OUT/ctest.log" 2>&1; }

consumer() {
  local prefix=$PWD/build/gpu-install
  rm -rf "$prefix" build/gpu-example
  {
    cmake --install build/release --prefix "$prefix" &&
      cmake -S examples -B build/gpu-example -G Ninja -DCMAKE_PREFIX_PATH="$prefix" && cmake --build build/gpu-example &&
      build/release/klab gen --pattern natural --size 4K "$OUT/in.png" &&
      build/gpu-example/blur "$OUT/in.png" "$OUT/blur.png" &&
      build/release/klab apply --backend gpu --verify --filter gaussian:5 "$OUT/in.png" "$OUT/apply.png" &&
      cmp "$OUT/blur.png" "$OUT/apply.png"
  } >"$OUT/consumer.log" 2>&1
}

# Installed into a folder on PYTHONPATH, beside the machine's packages (torch, cupy, nanobind,
# scikit-build-core), whether PYTHON is a system Python or a virtual environment's.
site=$PWD/build/gpu-python-site
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
py=$PYTHON
python_install() {
  rm -rf "$site"
  "$py" -m pip install --no-build-isolation --no-deps -v --target "$site" --config-settings=build-dir=build/release \
    --config-settings=cmake.define.KLAB_BUILD_TESTS=ON . >"$OUT/pip.log" 2>&1
  local status=$?
  cmake -S . -B build/release -DKLAB_BUILD_PYTHON=OFF >>"$OUT/pip.log" 2>&1  # the preset's tree again
  return $status
}

python_tests() { KLAB_CLI=$PWD/build/release/klab timeout 480 "$py" -m pytest -v -rs python/tests >"$OUT/pytest.log" 2>&1; }

sanitize() {
  timeout 480 compute-sanitizer --tool memcheck --error-exitcode 1 --print-limit 20 "$py" python/tests/sanitize_run.py \
    >"$OUT/sanitize.log" 2>&1
}

peers() { timeout 480 "$py" -m klab.peers --budget-s 1 --samples 20 --out "$OUT/peers" "$@" >"$OUT/peers.log" 2>&1; }

step build build
step ctest library_ctest
step consumer consumer
step python python_install
step pytest python_tests
step sanitize sanitize
step peers peers "$@"
[[ -f "$OUT/peers/peers.md" ]] && wanted peers && cat "$OUT/peers/peers.md"

line() { printf '%-10s: %s%s\n' "$1" "${result[$1]}" "${seconds[$1]:+ in ${seconds[$1]} s}${2:+ -- $2}"; }
{
  echo "== klab gpu-python summary"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
  line build
  line ctest "$(grep -E 'tests passed|tests failed' "$OUT/ctest.log" 2>/dev/null | tail -n1)"
  line consumer "$(grep -E '^gpu:' "$OUT/consumer.log" 2>/dev/null)"
  line python "$(grep -E '^Successfully installed' "$OUT/pip.log" 2>/dev/null)"
  line pytest "$(tail -n1 "$OUT/pytest.log" 2>/dev/null)"
  grep -E '^(SKIPPED|FAILED|ERROR)' "$OUT/pytest.log" 2>/dev/null | sed 's/^/  /' | head -n 12
  line sanitize "$(grep -E 'ERROR SUMMARY|every call verified' "$OUT/sanitize.log" 2>/dev/null | tr '\n' ' ')"
  line peers "$(ls "$OUT"/peers/peers.json "$OUT"/peers/peers.md 2>/dev/null | tr '\n' ' ')"
} | tee "$OUT/summary.txt"
! grep -q FAILED "$OUT/summary.txt"
