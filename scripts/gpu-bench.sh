#!/usr/bin/env bash
# The main job on the GPU machine, in one call (e.g. through the device tool): builds the release
# preset, runs `klab run` with the given arguments (default: the full study: tune what is missing,
# benchmark, report) into results/, and packs results/<gpu-slug>/ and the log into
# $OUT/results.tar.gz (one file: the device tool brings back few). Commit what comes back unedited.
# Usage: bash scripts/gpu-bench.sh [klab run options...]
# Where the build, the tuning and the study do not fit one call: first `bash scripts/gpu-tune.sh
# --study full --missing-only` (klab run's tuning step alone), its results/<gpu-slug>/autotune.json
# into the tree, then this script, which finds nothing left to tune.
# On a copy of the tree (a GPU machine's may hold no .git, or a stale one), set KLAB_GIT_COMMIT to
# the commit copied (and KLAB_GIT_DIRTY=1 for a modified tree) so that the results name it.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-bench}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH" PYTHONUNBUFFERED=1

start=$(date +%s)
if ! { cmake --preset release >"$OUT/build.log" 2>&1 && cmake --build --preset release >>"$OUT/build.log" 2>&1; }; then
  tail -n 30 "$OUT/build.log"
  echo "gpu-bench: the build failed (log: $OUT/build.log)"
  exit 1
fi
echo "gpu-bench: built in $(($(date +%s) - start)) s"
# The commit the results will name: check it before the long run (KLAB_GIT_COMMIT above).
echo "gpu-bench: $(./build/release/klab info | head -n 1)"
./build/release/klab run --results results "$@" >"$OUT/run.log" 2>&1
status=$?
# The folder this run wrote, as klab run names it in its last line; nothing is packed without it
# (a run that failed early must not pass off the committed folder as its own).
dir=$(sed -n 's/^klab run finished in .* s; results in //p' "$OUT/run.log" | tail -n 1)
if [[ -n "$dir" && -d "$dir" ]]; then
  cp "$OUT/run.log" "$dir/run.log"
  tar czf "$OUT/results.tar.gz" -C "$(dirname "$dir")" "$(basename "$dir")"
else
  echo "gpu-bench: klab run named no results folder; nothing packed"
fi
grep -E "klab-bench: |FAILED|failed|error" "$OUT/run.log" | head -n 40
tail -n 5 "$OUT/run.log"
echo "gpu-bench: klab run exited $status after $(($(date +%s) - start)) s; results in $OUT/results.tar.gz"
exit "$status"
