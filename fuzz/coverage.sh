#!/usr/bin/env bash
# Line coverage of the parsers by the fuzz corpora (fuzz/README.md): builds the fuzz targets with
# clang's source-based coverage into build/fuzz-coverage, runs each target once over its seeds and
# what the last `ctest --preset fuzz` found (build/fuzz/fuzz-work/<target>/corpus), and prints
# llvm-cov's report of the target's parser sources. Needs llvm-profdata and llvm-cov (Debian: llvm).
set -euo pipefail
cd "$(dirname "$0")/.."
tool() { command -v "$1" || command -v "$1-14" || { echo "coverage.sh: $1 not found (Debian: apt-get install llvm)" >&2; exit 1; }; }
profdata=$(tool llvm-profdata)
cov=$(tool llvm-cov)

cmake --preset fuzz -B build/fuzz-coverage -DKLAB_FUZZ_COVERAGE=ON >/dev/null
cmake --build build/fuzz-coverage --target klab-fuzz >/dev/null
out=build/fuzz-coverage/profiles
rm -rf "$out" && mkdir -p "$out"

# target:function:the sources it parses with[:only these functions, a regular expression, where
# the file holds much besides the parser]
targets=(
  "png:image:harness/io/png_codec.cpp harness/io/image_io.cpp"
  "jpeg:image:harness/io/jpeg_codec.cpp"
  "pnm:image:harness/io/pnm_codec.cpp"
  "mask:mask:harness/mask.cpp"
  "spec:spec:harness/filter_spec.cpp harness/border.cpp autotune/problem_class.cpp"
  "bench_json:bench_json:bench/bench_json.cpp"
  "tuning_cache:tuning_cache:autotune/tuning_cache.cpp"
  "apply_list:apply_list:cli/apply_batch.cpp:parse_input_list"
)
for entry in "${targets[@]}"; do
  IFS=: read -r target function sources only <<<"$entry"
  binary=build/fuzz-coverage/klab-fuzz-$function
  corpora=("data/fuzz/$target")
  if [[ -d build/fuzz/fuzz-work/$target/corpus ]]; then corpora+=("build/fuzz/fuzz-work/$target/corpus"); fi
  LLVM_PROFILE_FILE="$out/$target.profraw" "$binary" -runs=0 "${corpora[@]}" >/dev/null 2>&1
  "$profdata" merge -sparse "$out/$target.profraw" -o "$out/$target.profdata"
  echo "== $target (inputs: $(find "${corpora[@]}" -type f | wc -l))"
  # shellcheck disable=SC2086  # the list of sources
  if [[ -n "${only:-}" ]]; then
    "$cov" report -show-functions "$binary" -instr-profile="$out/$target.profdata" $sources | grep -E "^Name|$only"
  else
    "$cov" report "$binary" -instr-profile="$out/$target.profdata" $sources | tail -n +3
  fi
done
