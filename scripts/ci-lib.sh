#!/usr/bin/env bash
# CI's check of klab as a library (issue 18), after the test command has built BUILD (build/ci):
#   1. cmake --install BUILD into build/ci-install; examples/ built against the installed package
#      and run (no GPU in CI: its CPU fallback, the reference), its output compared byte for byte
#      with `klab apply --backend cpu`;
#   2. the Python package as the README installs it (a virtual environment, pip install .), then
#      pytest: the CPU tests against BUILD's klab, the GPU tests skipped. pip builds in BUILD
#      (-C build-dir): the library is compiled already, only the module is new (a fresh build
#      folder would compile everything again: about 2.5 more minutes on CI's two cores).
# Usage: bash scripts/ci-lib.sh [BUILD]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
prefix=$PWD/build/ci-install
work=build/ci-lib
rm -rf "$prefix" build/ci-example "$work"
mkdir -p "$work"

start=$(date +%s)
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
cmake -S examples -B build/ci-example -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >"$work/example.log"
cmake --build build/ci-example >>"$work/example.log"
"$build/klab" gen --pattern natural --size 640x480 "$work/in.png" >/dev/null
build/ci-example/blur "$work/in.png" "$work/blur.png"
"$build/klab" apply --backend cpu --filter gaussian:5 "$work/in.png" "$work/apply.png" >/dev/null
cmp "$work/blur.png" "$work/apply.png"
echo "ci-lib: installed package and examples/ consumer ok ($(($(date +%s) - start)) s)"

start=$(date +%s)
python3 -m venv build/ci-venv
build/ci-venv/bin/pip install --quiet --upgrade pip
build/ci-venv/bin/pip install --quiet --config-settings=build-dir="$build" \
  --config-settings=cmake.define.KLAB_BUILD_TESTS=ON ".[test]"
# BUILD as the preset left it: without the module, whose nanobind lived in pip's temporary folder.
cmake -S . -B "$build" -DKLAB_BUILD_PYTHON=OFF >"$work/reconfigure.log"
echo "ci-lib: pip install . ok ($(($(date +%s) - start)) s)"
KLAB_CLI="$PWD/$build/klab" build/ci-venv/bin/python -m pytest -q -rs python/tests
