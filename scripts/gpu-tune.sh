#!/usr/bin/env bash
# The autotuner on the GPU machine, in one call (e.g. through the device tool): builds the release
# preset, runs `klab tune` with the given arguments (default: every variant of every operation,
# convolutions, Sobel and integral images, at HD and 8K, 3x3 and 9x9, RGB, AoS and SoA: klab tune's
# own defaults) into results/, merging with the cache already there, and
# copies results/ and the log to $OUT (default build/gpu-tune). Commit what comes back unedited.
# Usage: bash scripts/gpu-tune.sh [klab tune options...]
# On a copy of the tree (a GPU machine's may hold no .git, or a stale one), set KLAB_GIT_COMMIT to
# the commit copied (and KLAB_GIT_DIRTY=1 for a modified tree) so that the records name it.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-tune}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"

if ! { cmake --preset release >"$OUT/build.log" 2>&1 && cmake --build --preset release >>"$OUT/build.log" 2>&1; }; then
  tail -n 30 "$OUT/build.log"
  echo "gpu-tune: the build failed (log: $OUT/build.log)"
  exit 1
fi
echo "gpu-tune: $(./build/release/klab info | head -n 1)"  # the commit the records will name
./build/release/klab tune --results results "$@" 2>&1 | tee "$OUT/tune.log"
tuned=${PIPESTATUS[0]}
cp -r results "$OUT/"
exit "$tuned"
