#!/usr/bin/env bash
# The GPU machine's check of klab as a library (issue 18), in one call:
#   build (release preset) and the library's C++ tests with `klab apply`'s GPU tests (the auto
#   choice moved into autotune/variant_choice); cmake --install and the examples/ consumer on the
#   GPU (its output equal to `klab apply --backend gpu`'s byte for byte); the Python package
#   installed offline (pip install --no-build-isolation: scikit-build-core and nanobind must be
#   there); pytest, GPU tests included (PyTorch, CuPy); one Python run under compute-sanitizer
#   memcheck; `python -m klab.peers` into $OUT/peers (peers.json, peers.md); a short summary last.
# Logs go to $OUT (default build/gpu-python). Usage: bash scripts/gpu-python.sh [PEERS OPTIONS...]
# (e.g. --sizes HD,8K); PYTHON names the interpreter (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-python}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PATH="/usr/local/cuda/bin:$PATH"
PYTHON=${PYTHON:-python3}
status() { if [[ $1 -eq 0 ]]; then echo "ok"; else echo "FAILED (exit $1)"; fi; }
elapsed() { echo "$(($(date +%s) - $1)) s"; }

start=$(date +%s)
cmake --preset release >"$OUT/build.log" 2>&1 && cmake --build --preset release >>"$OUT/build.log" 2>&1
build=$? build_time=$(elapsed "$start")
ctest_status=1 consumer=1 install=1 pytest_status=1 sanitize=1 peers=1
if [[ $build -eq 0 ]]; then
  ctest --preset release -R 'Library|ApplyGpu|Autotune' --output-on-failure >"$OUT/ctest.log" 2>&1
  ctest_status=$?

  # The installed package and its consumer, on the GPU.
  prefix=$PWD/build/gpu-install
  rm -rf "$prefix" build/gpu-example
  {
    cmake --install build/release --prefix "$prefix" &&
      cmake -S examples -B build/gpu-example -G Ninja -DCMAKE_PREFIX_PATH="$prefix" && cmake --build build/gpu-example &&
      build/release/klab gen --pattern natural --size 4K "$OUT/in.png" &&
      build/gpu-example/blur "$OUT/in.png" "$OUT/blur.png" &&
      build/release/klab apply --backend gpu --verify --filter gaussian:5 "$OUT/in.png" "$OUT/apply.png" &&
      cmp "$OUT/blur.png" "$OUT/apply.png"
  } >"$OUT/consumer.log" 2>&1
  consumer=$?
fi

# The Python package, offline: a virtual environment that sees the machine's packages (torch,
# cupy, nanobind, scikit-build-core), else a target folder on PYTHONPATH.
start=$(date +%s)
venv=build/gpu-venv
rm -rf "$venv" build/gpu-python-site
if "$PYTHON" -m venv --system-site-packages "$venv" >"$OUT/pip.log" 2>&1; then
  py=$PWD/$venv/bin/python
  "$py" -m pip install --no-build-isolation --no-deps -v . >>"$OUT/pip.log" 2>&1
  install=$?
else
  py=$PYTHON
  "$py" -m pip install --no-build-isolation --no-deps --target build/gpu-python-site -v . >>"$OUT/pip.log" 2>&1
  install=$?
  export PYTHONPATH=$PWD/build/gpu-python-site${PYTHONPATH:+:$PYTHONPATH}
fi
install_time=$(elapsed "$start")

if [[ $install -eq 0 ]]; then
  KLAB_CLI=$PWD/build/release/klab "$py" -m pytest -v -rs python/tests >"$OUT/pytest.log" 2>&1
  pytest_status=$?
  compute-sanitizer --tool memcheck --error-exitcode 1 --print-limit 20 "$py" python/tests/sanitize_run.py >"$OUT/sanitize.log" 2>&1
  sanitize=$?
  start=$(date +%s)
  "$py" -m klab.peers --budget-s 1 --samples 20 --out "$OUT/peers" "$@" >"$OUT/peers.log" 2>&1
  peers=$? peers_time=$(elapsed "$start")
  cat "$OUT/peers/peers.md" 2>/dev/null
fi

{
  echo "== klab gpu-python summary"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
  echo "build (release preset)     : $(status $build) in $build_time"
  echo "ctest Library|ApplyGpu|Autotune : $(status $ctest_status) -- $(grep -E 'tests passed|tests failed' "$OUT/ctest.log" 2>/dev/null | tail -n1)"
  echo "install + examples/ on GPU : $(status $consumer) -- $(grep -E '^gpu:' "$OUT/consumer.log" 2>/dev/null)"
  echo "pip install (offline)      : $(status $install) in $install_time"
  echo "pytest python/tests        : $(status $pytest_status) -- $(tail -n1 "$OUT/pytest.log" 2>/dev/null)"
  grep -E '^SKIPPED' "$OUT/pytest.log" 2>/dev/null | sed 's/^/  /' | head -n 10
  echo "compute-sanitizer memcheck : $(status $sanitize) -- $(grep -E 'ERROR SUMMARY|every call verified' "$OUT/sanitize.log" 2>/dev/null | tr '\n' ' ')"
  echo "python -m klab.peers       : $(status $peers) in ${peers_time:-0 s} -> $OUT/peers/peers.json, peers.md"
} | tee "$OUT/summary.txt"
[[ $build -eq 0 && $ctest_status -eq 0 && $consumer -eq 0 && $install -eq 0 && $pytest_status -eq 0 && $sanitize -eq 0 && $peers -eq 0 ]]
